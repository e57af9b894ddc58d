-- Semaphore acquire: KEYS[1] is a sorted set whose members are the tokens
-- of the holders and whose scores are the times their permits expire, in
-- ms on the server's clock. Expired permits are dropped first. A token
-- already present is refreshed (re-entrant); a new one is let in while
-- fewer than ARGV[3] permits are live. The comparison is with this
-- caller's permits, so raising them lets more in at once, and lowering
-- them refuses newcomers until enough holders left, never evicting one.
-- The key lives as long as its latest permit, so an abandoned key vanishes.
-- KEYS[1]: the semaphore. ARGV[1]: the token. ARGV[2]: the expiry in ms.
-- ARGV[3]: the permits.
-- Returns "OK" when ARGV[1] holds a permit afterwards, else the ms until
-- the earliest permit expires, or "WRONGTYPE <type>".
-- A key of another type (a RedisLock's, say) is reported, not raised as
-- WRONGTYPE: go-zero's circuit breaker counts every error reply, and one
-- misnamed key must not open it for the whole store.
-- The type is read only when it is wrong (pcall on the first command, a
-- TYPE call fewer per request: issue 30); any other error is returned as
-- it is.
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local dropped = redis.pcall("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
if type(dropped) == "table" and dropped.err then
    if string.sub(dropped.err, 1, 9) == "WRONGTYPE" then
        return "WRONGTYPE " .. redis.call("TYPE", KEYS[1]).ok
    end
    return dropped
end
if redis.call("ZSCORE", KEYS[1], ARGV[1]) or redis.call("ZCARD", KEYS[1]) < tonumber(ARGV[3]) then
    redis.call("ZADD", KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
    local last = redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")
    redis.call("PEXPIRE", KEYS[1], tonumber(last[2]) - now)
    return "OK"
end
local first = redis.call("ZRANGE", KEYS[1], 0, 0, "WITHSCORES")
return tonumber(first[2]) - now
