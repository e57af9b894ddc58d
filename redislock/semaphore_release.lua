-- Semaphore release: frees the permit of ARGV[1] only, after dropping
-- expired permits. A release is announced on ARGV[2], a shard channel in
-- the key's slot, with a payload that hands it to one waiter per process
-- (one permit, one winner); servers before 7.0 get PUBLISH, as in
-- release.lua. Without ARGV[2] (WithoutWakeups) nothing is announced.
-- The key's expiry shrinks to its latest remaining permit.
-- KEYS[1]: the semaphore. ARGV[1]: the token. ARGV[2]: the channel, if any.
-- Returns 1 when this token's permit was freed, else 0, or
-- "WRONGTYPE <type>".
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
if redis.call("ZREM", KEYS[1], ARGV[1]) == 0 then
    return 0
end
local last = redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")
if last[2] then
    redis.call("PEXPIRE", KEYS[1], tonumber(last[2]) - now)
end
if ARGV[2] then
    local sent = redis.pcall("SPUBLISH", ARGV[2], "released")
    if type(sent) == "table" and sent.err then
        redis.pcall("PUBLISH", ARGV[2], "released")
    end
end
return 1
