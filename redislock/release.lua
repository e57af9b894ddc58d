-- Compare-and-delete: only the holder's token deletes the key. A release
-- is announced on ARGV[2], a shard channel in the key's slot, when a
-- waiter said it is waiting: KEYS[2], the waiter flag that a waiting
-- acquire's refusal sets (acquire.lua, fence.lua) in the same script that
-- saw the lock held, so no waiter that sleeps on the channel can miss the
-- release, and a release nobody waits for publishes nothing. One MGET reads
-- the token and the flag: a redis.call of its own for the flag cost Redis
-- about 0.7 µs per release, a fifth of the script, whether anyone waited
-- or not. The flag is left to expire: other waiters may still sleep.
-- Servers before 7.0 lack SPUBLISH and get PUBLISH (waiters subscribe the
-- same way, decided by the same test). The announcement is best effort: a
-- user whose ACL forbids publishing still releases, and its waiters fall
-- back to their back-off. Without ARGV[2] (WithoutWakeups) nothing is
-- announced. A key that holds another type is not ours: MGET reads it as
-- missing and the release answers 0, where GET would raise WRONGTYPE, an
-- error reply that go-zero's circuit breaker counts.
-- KEYS[1]: the lock key. KEYS[2]: the waiter flag, with ARGV[2].
-- ARGV[1]: the token. ARGV[2]: the channel, if any.
-- Returns 1 when deleted, else 0.
if not ARGV[2] then
    if redis.call("MGET", KEYS[1])[1] ~= ARGV[1] then
        return 0
    end
    redis.call("DEL", KEYS[1])
    return 1
end
local held = redis.call("MGET", KEYS[1], KEYS[2])
if held[1] ~= ARGV[1] then
    return 0
end
redis.call("DEL", KEYS[1])
if held[2] then
    local sent = redis.pcall("SPUBLISH", ARGV[2], "released")
    if type(sent) == "table" and sent.err then
        redis.pcall("PUBLISH", ARGV[2], "released")
    end
end
return 1
