-- Compare-and-delete of every key in KEYS that holds the token ARGV[1],
-- each release announced on its key's channel as release.lua announces a
-- RedisLock's (SPUBLISH, or PUBLISH before Redis 7.0; best effort), so
-- that the key's waiters, RedisLocks or multi-locks, wake at once.
-- KEYS: the lock's keys (of one slot on Redis Cluster). ARGV[1]: the token.
-- ARGV[i+1]: the release channel of KEYS[i]; none WithoutWakeups.
-- Returns how many keys were deleted.
local freed = 0
for i, key in ipairs(KEYS) do
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
end
return freed
