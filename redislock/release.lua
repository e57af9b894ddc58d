-- Compare-and-delete: only the holder's token deletes the key. A release
-- is announced on ARGV[2], a shard channel in the key's slot, when a
-- waiter said it is waiting: KEYS[2], the waiter flag that a waiting
-- acquire's refusal sets (acquire.lua, fence.lua) in the same script that
-- saw the lock held, so no waiter that sleeps on the channel can miss the
-- release, and a release nobody waits for publishes nothing. The flag is
-- left to expire: other waiters may still sleep. Servers before 7.0 lack
-- SPUBLISH and get PUBLISH (waiters subscribe the same way, decided by the
-- same test). The announcement is best effort: a user whose ACL forbids
-- publishing still releases, and its waiters fall back to their back-off.
-- Without ARGV[2] (WithoutWakeups) nothing is announced.
-- KEYS[1]: the lock key. KEYS[2]: the waiter flag, with ARGV[2].
-- ARGV[1]: the token. ARGV[2]: the channel, if any.
-- Returns 1 when deleted, else 0.
if redis.call("GET", KEYS[1]) == ARGV[1] then
    redis.call("DEL", KEYS[1])
    if ARGV[2] and redis.call("EXISTS", KEYS[2]) == 1 then
        local sent = redis.pcall("SPUBLISH", ARGV[2], "released")
        if type(sent) == "table" and sent.err then
            redis.pcall("PUBLISH", ARGV[2], "released")
        end
    end
    return 1
end
return 0
