-- Read lock: add this token's share to the readers, or refresh it, unless
-- a writer holds the key or another writer waits for it (writer
-- preference). Shares are members of a sorted set scored by their expiry
-- on the server's clock, so each expires on its own; expired ones are
-- purged first, and the set lives as long as its latest share.
-- KEYS[1]: the lock key (the writer's). KEYS[2]: the readers' set.
-- KEYS[3]: a waiting writer's intent. KEYS[4]: the fencing counter.
-- ARGV[1]: the token. ARGV[2]: the share's expiry in ms.
-- Returns {1, the counter} when this token holds a share afterwards,
-- {0, PTTL of what refused it} when refused, and {-1, 0} when this token
-- holds the write side.
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
local expires = now + tonumber(ARGV[2])
if not redis.call("ZSCORE", KEYS[2], ARGV[1]) then
    local writer = redis.call("GET", KEYS[1])
    if writer == ARGV[1] then
        return {-1, 0}
    end
    if writer then
        return {0, redis.call("PTTL", KEYS[1])}
    end
    -- A waiting writer stops new readers (a share held is refreshed).
    if redis.call("EXISTS", KEYS[3]) == 1 then
        return {0, redis.call("PTTL", KEYS[3])}
    end
end
redis.call("ZADD", KEYS[2], expires, ARGV[1])
local last = redis.call("ZRANGE", KEYS[2], -1, -1, "WITHSCORES")
redis.call("PEXPIREAT", KEYS[2], last[2])
return {1, tonumber(redis.call("GET", KEYS[4]) or "0")}
