-- Read lock: add this token's share to the readers, or refresh it, unless
-- a writer holds the key or another writer waits for it (writer
-- preference). Shares are members of a sorted set scored by their expiry
-- on the server's clock, so each expires on its own; expired ones are
-- purged first, and the set lives as long as its latest share.
-- A waiting reader refused by a writer also sets the key's waiter flag,
-- which a RedisLock holding the key checks before it announces its release
-- (release.lua, acquire.lua): the flag is the last key, when ARGV[3] gives
-- its expiry.
-- KEYS[1]: the lock key (the writer's). KEYS[2]: the readers' set.
-- KEYS[3]: a waiting writer's intent. KEYS[4], WithFencing only: the
-- fencing counter, read, never written. Last, when ARGV[3]: the waiter
-- flag.
-- ARGV[1]: the token. ARGV[2]: the share's expiry in ms. ARGV[3]: the
-- waiter flag's expiry in ms (when waiting).
-- Returns {1, the counter (0 without KEYS[4])} when this token holds a
-- share afterwards, {0, PTTL of what refused it} when refused, {-1, 0}
-- when this token holds the write side, and "WRONGTYPE <type> <key>",
-- before any write, when a key holds a value of another type.
-- That report is not raised as WRONGTYPE: go-zero's circuit breaker counts
-- every error reply, and one misnamed key must not open it for the store.
local function misfit(key, want)
    local kind = redis.call("TYPE", key).ok
    if kind ~= want and kind ~= "none" then
        return "WRONGTYPE " .. kind .. " " .. key
    end
end
local counter, flag = KEYS[4], nil
if ARGV[3] then
    flag = KEYS[#KEYS]
    if #KEYS == 4 then
        counter = nil
    end
end
local wrong = misfit(KEYS[1], "string") or misfit(KEYS[2], "zset") or misfit(KEYS[3], "string")
    or (counter and misfit(counter, "string"))
if wrong then
    return wrong
end
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
        if flag and redis.call("PTTL", flag) < tonumber(ARGV[3]) then
            redis.call("SET", flag, "1", "PX", ARGV[3])
        end
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
local fence = 0
if counter then
    fence = tonumber(redis.call("GET", counter) or "0")
end
return {1, fence}
