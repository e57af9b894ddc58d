-- Read unlock: remove this token's share, if it has not expired. When the
-- last share goes, the waiters are woken (ARGV[3], on ARGV[2], as
-- rwlock_unlock.lua announces): a waiting writer may now take the key.
-- Every waiter is woken, not one, since a process's first waiter may be a
-- reader held back by that writer's intent, which would take the wake and
-- leave the writer to its back-off. While shares remain nobody is woken:
-- no waiter can proceed.
-- KEYS[1]: the readers' set. ARGV[1]: the token. ARGV[2]: the channel, if
-- any. ARGV[3]: the payload.
-- Returns 1 when the share was removed, else 0.
local time = redis.call("TIME")
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now)
if redis.call("ZREM", KEYS[1], ARGV[1]) == 0 then
    return 0
end
local last = redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")
if last[2] then
    redis.call("PEXPIREAT", KEYS[1], last[2])
elseif ARGV[2] then
    local sent = redis.pcall("SPUBLISH", ARGV[2], ARGV[3])
    if type(sent) == "table" and sent.err then
        redis.pcall("PUBLISH", ARGV[2], ARGV[3])
    end
end
return 1
