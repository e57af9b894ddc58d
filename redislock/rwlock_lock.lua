-- Write lock: take the key as a plain lock does (the token with PX) when
-- no other writer holds it and no reader's share is left, minting a
-- fencing token WithFencing; refresh it when this token holds it already.
-- A waiting writer (ARGV[3] = "1") that is refused leaves an intent, which
-- stops new readers until it gets the key or gives up.
-- A waiting writer refused by a writer marks a RedisLock's hold as waited
-- on, so that its release announces itself (release.lua, acquire.lua), or
-- sets the key's waiter flag for any other writer (the flag is the last
-- key, when ARGV[5] gives its expiry); an RWLock's own writer token is never
-- marked (its scripts compare it exactly) and announces every release.
-- KEYS[1]: the lock key. KEYS[2]: the readers' set. KEYS[3]: the intent.
-- KEYS[4], WithFencing only: the fencing counter. Last, when ARGV[5]: the
-- waiter flag.
-- ARGV[1]: the token. ARGV[2]: the expiry in ms. ARGV[3]: "1" to wait.
-- ARGV[4]: the intent's expiry in ms (when waiting). ARGV[5]: the waiter
-- flag's expiry in ms (when waiting).
-- Returns {1, fence (0 without KEYS[4])} when this token holds the key
-- afterwards, {0, ms} when refused (ms: the writer's PTTL or when the
-- earliest share expires), {-1, 0} when this token holds a read share,
-- and "WRONGTYPE <type> <key>", before any write, when a key holds a value
-- of another type.
-- That report is not raised as WRONGTYPE: go-zero's circuit breaker counts
-- every error reply, and one misnamed key must not open it for the store.
local function misfit(key, want)
    local kind = redis.call("TYPE", key).ok
    if kind ~= want and kind ~= "none" then
        return "WRONGTYPE " .. kind .. " " .. key
    end
end
local counter, flag = KEYS[4], nil
if ARGV[5] then
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
if redis.call("ZSCORE", KEYS[2], ARGV[1]) then
    return {-1, 0}
end
local writer = redis.call("GET", KEYS[1])
if writer == ARGV[1] then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    if redis.call("GET", KEYS[3]) == ARGV[1] then
        redis.call("DEL", KEYS[3])
    end
    local fence = 0
    if counter then
        fence = tonumber(redis.call("GET", counter) or "0")
    end
    return {1, fence}
end
local busy
if writer then
    busy = redis.call("PTTL", KEYS[1])
    -- A RedisLock's hold is marked (see acquire.lua).
    if flag and #writer == 27 and string.find(writer, "^[A-Z2-7]+%.$") then
        redis.pcall("SETRANGE", KEYS[1], 26, "!")
    elseif flag and (#writer ~= 27 or string.byte(writer, 27) ~= 33)
        and redis.call("PTTL", flag) < tonumber(ARGV[5]) then
        redis.call("SET", flag, "1", "PX", ARGV[5])
    end
else
    local first = redis.call("ZRANGE", KEYS[2], 0, 0, "WITHSCORES")
    if first[2] then
        busy = tonumber(first[2]) - now
    end
end
if busy then
    if ARGV[3] == "1" then
        local intent = redis.call("GET", KEYS[3])
        if intent == false or intent == ARGV[1] then
            redis.call("SET", KEYS[3], ARGV[1], "PX", ARGV[4])
        end
    end
    return {0, busy}
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
if redis.call("GET", KEYS[3]) == ARGV[1] then
    redis.call("DEL", KEYS[3])
end
if counter then
    return {1, redis.call("INCR", counter)}
end
return {1, 0}
