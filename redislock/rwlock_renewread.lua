-- Compare-and-extend of a read share: only while this token's share has
-- not expired, and never re-created.
-- KEYS[1]: the lock key, only so that a go-redis Ring runs this script on
-- the shard where rwlock_rlock.lua ran (it routes by the first key).
-- KEYS[2]: the readers' set. ARGV[1]: the token. ARGV[2]: the expiry in ms.
-- Returns 1 when extended, -1 when the share is gone (expired or
-- deleted), or "WRONGTYPE <type> <key>" when the readers' set holds a
-- value of another type (reported, not raised: go-zero's circuit breaker
-- counts every error reply).
local kind = redis.call("TYPE", KEYS[2]).ok
if kind ~= "zset" and kind ~= "none" then
    return "WRONGTYPE " .. kind .. " " .. KEYS[2]
end
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
if not redis.call("ZSCORE", KEYS[2], ARGV[1]) then
    return -1
end
redis.call("ZADD", KEYS[2], "XX", now + tonumber(ARGV[2]), ARGV[1])
local last = redis.call("ZRANGE", KEYS[2], -1, -1, "WITHSCORES")
redis.call("PEXPIREAT", KEYS[2], last[2])
return 1
