-- Read lock: add this token's share to the readers, or refresh it, unless
-- a writer holds the key or another writer waits for it (writer
-- preference). Shares are members of a sorted set scored by their expiry
-- on the server's clock, so each expires on its own; expired ones are
-- purged first, and the set lives as long as its latest share.
-- A waiting reader refused by a writer marks a RedisLock's hold as waited
-- on, so that its release announces itself (release.lua, acquire.lua), or
-- sets the key's waiter flag for any other writer (the flag is the last
-- key, when ARGV[3] gives its expiry); an RWLock's own writer token is never
-- marked (its scripts compare it exactly) and announces every release.
-- KEYS[1]: the lock key (the writer's). KEYS[2]: the readers' set.
-- KEYS[3]: a waiting writer's intent. KEYS[4], WithFencing only: the
-- fencing counter, read, never written. Last, when ARGV[3]: the waiter
-- flag.
-- ARGV[1]: the token. ARGV[2]: the share's expiry in ms. ARGV[3]: the
-- waiter flag's expiry in ms (when waiting).
-- Returns {1, the counter (0 without KEYS[4])} when this token holds a
-- share afterwards, {0, PTTL of what refused it} when refused, {-1, 0}
-- when this token holds the write side, and "WRONGTYPE <type> <key>",
-- before any write but the purge of expired shares, when a key holds a
-- value of another type.
-- That report is not raised as WRONGTYPE: go-zero's circuit breaker counts
-- every error reply, and one misnamed key must not open it for the store.
-- Each key's type is read only when it is wrong: the first command on it
-- runs in pcall, and its WRONGTYPE becomes the report (three TYPE calls
-- fewer per read lock: issue 30); any other error is returned as it is.
-- The lock key and the fencing counter are read before any write; the
-- readers' set's first command is the purge of expired shares, which
-- fails before writing; the intent key's type is read only when the
-- script reaches it (no share held, no writer) and it exists.
local function wrongtype(key, reply)
    if type(reply) == "table" and reply.err then
        if string.sub(reply.err, 1, 9) == "WRONGTYPE" then
            return "WRONGTYPE " .. redis.call("TYPE", key).ok .. " " .. key
        end
        return reply
    end
end
local counter, flag = KEYS[4], nil
if ARGV[3] then
    flag = KEYS[#KEYS]
    if #KEYS == 4 then
        counter = nil
    end
end
local writer = redis.pcall("GET", KEYS[1])
local wrong = wrongtype(KEYS[1], writer)
if wrong then
    return wrong
end
local fence = 0
if counter then
    local n = redis.pcall("GET", counter)
    wrong = wrongtype(counter, n)
    if wrong then
        return wrong
    end
    fence = tonumber(n or "0")
end
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
wrong = wrongtype(KEYS[2], redis.pcall("ZREMRANGEBYSCORE", KEYS[2], "-inf", now))
if wrong then
    return wrong
end
local expires = now + tonumber(ARGV[2])
if not redis.call("ZSCORE", KEYS[2], ARGV[1]) then
    if writer == ARGV[1] then
        return {-1, 0}
    end
    if writer then
        -- A RedisLock's hold is marked (see acquire.lua).
        if flag and #writer == 27 and string.find(writer, "^[A-Z2-7]+%.$") then
            redis.pcall("SETRANGE", KEYS[1], 26, "!")
        elseif flag and (#writer ~= 27 or string.byte(writer, 27) ~= 33)
            and redis.call("PTTL", flag) < tonumber(ARGV[3]) then
            redis.call("SET", flag, "1", "PX", ARGV[3])
        end
        return {0, redis.call("PTTL", KEYS[1])}
    end
    -- A waiting writer stops new readers (a share held is refreshed).
    if redis.call("EXISTS", KEYS[3]) == 1 then
        local kind = redis.call("TYPE", KEYS[3]).ok
        if kind ~= "string" then
            return "WRONGTYPE " .. kind .. " " .. KEYS[3]
        end
        return {0, redis.call("PTTL", KEYS[3])}
    end
end
redis.call("ZADD", KEYS[2], expires, ARGV[1])
local last = redis.call("ZRANGE", KEYS[2], -1, -1, "WITHSCORES")
redis.call("PEXPIREAT", KEYS[2], last[2])
return {1, fence}
