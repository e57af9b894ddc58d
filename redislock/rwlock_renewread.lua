-- Compare-and-extend of a read share: only while this token's share has
-- not expired, and never re-created.
-- KEYS[1]: the readers' set. ARGV[1]: the token. ARGV[2]: the expiry in ms.
-- Returns 1 when extended, else 0.
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
if not redis.call("ZSCORE", KEYS[1], ARGV[1]) then
    return 0
end
redis.call("ZADD", KEYS[1], "XX", now + tonumber(ARGV[2]), ARGV[1])
local last = redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")
redis.call("PEXPIREAT", KEYS[1], last[2])
return 1
