-- Read unlock: remove this token's share, if it has not expired. When the
-- last share goes, the waiters are woken (ARGV[3], on ARGV[2], as
-- rwlock_unlock.lua announces): a waiting writer may now take the key.
-- Every waiter is woken, not one, since a process's first waiter may be a
-- reader held back by that writer's intent, which would take the wake and
-- leave the writer to its back-off. While shares remain nobody is woken:
-- no waiter can proceed.
-- KEYS[1]: the lock key, only so that a go-redis Ring runs this script on
-- the shard where rwlock_rlock.lua ran (it routes by the first key).
-- KEYS[2]: the readers' set. ARGV[1]: the token. ARGV[2]: the channel, if
-- any. ARGV[3]: the payload.
-- Returns 1 when the share was removed, else 0, or "WRONGTYPE <type>
-- <key>" when the readers' set holds a value of another type (reported,
-- not raised: go-zero's circuit breaker counts every error reply).
-- The type is read only when it is wrong (pcall on the first command, a
-- TYPE call fewer per release: issue 30); any other error is returned as
-- it is.
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local dropped = redis.pcall("ZREMRANGEBYSCORE", KEYS[2], "-inf", now)
if type(dropped) == "table" and dropped.err then
    if string.sub(dropped.err, 1, 9) == "WRONGTYPE" then
        return "WRONGTYPE " .. redis.call("TYPE", KEYS[2]).ok .. " " .. KEYS[2]
    end
    return dropped
end
if redis.call("ZREM", KEYS[2], ARGV[1]) == 0 then
    return 0
end
local last = redis.call("ZRANGE", KEYS[2], -1, -1, "WITHSCORES")
if last[2] then
    redis.call("PEXPIREAT", KEYS[2], last[2])
elseif ARGV[2] then
    local sent = redis.pcall("SPUBLISH", ARGV[2], ARGV[3])
    if type(sent) == "table" and sent.err then
        redis.pcall("PUBLISH", ARGV[2], ARGV[3])
    end
end
return 1
