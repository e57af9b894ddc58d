-- Compare-and-delete of every key in KEYS that holds the token ARGV[1],
-- each release announced on its key's channel as release.lua announces a
-- RedisLock's (SPUBLISH, or PUBLISH before Redis 7.0; best effort), so
-- that the key's waiters, RedisLocks or multi-locks, wake at once.
-- KEYS: the lock's keys (of one slot on Redis Cluster). ARGV[1]: the token.
-- ARGV[i+1]: the release channel of KEYS[i]; none WithoutWakeups.
-- Returns how many keys were deleted; or, when a key holds something other
-- than a string, {deleted, i, type} of the first such key.
-- Every key's type is checked before it is read: a key of another type (a
-- semaphore's, say) cannot hold the token, so it is skipped and reported,
-- not raised as WRONGTYPE. A raised error would leave the caller unsure
-- which keys were freed, and go-zero's circuit breaker counts every error
-- reply.
local freed, wrong, kind = 0, nil, nil
for i, key in ipairs(KEYS) do
    local t = redis.call("TYPE", key).ok
    if t == "string" then
        if redis.call("GET", key) == ARGV[1] then
            redis.call("DEL", key)
            freed = freed + 1
            local channel = ARGV[i + 1]
            if channel then
                local sent = redis.pcall("SPUBLISH", channel, "released")
                if type(sent) == "table" and sent.err then
                    redis.pcall("PUBLISH", channel, "released")
                end
            end
        end
    elseif t ~= "none" and not wrong then
        wrong, kind = i, t
    end
end
if wrong then
    return {freed, wrong, kind}
end
return freed
