-- Semaphore renew: compare-and-extend. Only a token whose permit is still
-- live (expired permits are dropped first) gets a new expiry; a lost
-- permit is never re-created. The key's own expiry follows its latest
-- permit, so it never ends before another holder's.
-- KEYS[1]: the semaphore. ARGV[1]: the token. ARGV[2]: the expiry in ms.
-- Returns 1 when extended, -1 when the permit is gone (expired, released
-- or deleted with the key), or "WRONGTYPE <type>".
-- A key of another type (a RedisLock's, say) is reported, not raised as
-- WRONGTYPE: go-zero's circuit breaker counts every error reply, and one
-- misnamed key must not open it for the whole store.
local kind = redis.call("TYPE", KEYS[1]).ok
if kind ~= "zset" and kind ~= "none" then
    return "WRONGTYPE " .. kind
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
if not redis.call("ZSCORE", KEYS[1], ARGV[1]) then
    return -1
end
redis.call("ZADD", KEYS[1], "XX", now + tonumber(ARGV[2]), ARGV[1])
local last = redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")
redis.call("PEXPIRE", KEYS[1], tonumber(last[2]) - now)
return 1
