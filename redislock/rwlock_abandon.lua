-- A waiting writer gives up: compare-and-delete of its intent, and, when
-- it was there, wake the readers it held back (ARGV[3] on ARGV[2], as
-- rwlock_unlock.lua announces).
-- KEYS[1]: the intent. ARGV[1]: the token. ARGV[2]: the channel, if any.
-- ARGV[3]: the payload.
-- Returns 1 when deleted, else 0.
if redis.call("GET", KEYS[1]) == ARGV[1] then
    redis.call("DEL", KEYS[1])
    if ARGV[2] then
        local sent = redis.pcall("SPUBLISH", ARGV[2], ARGV[3])
        if type(sent) == "table" and sent.err then
            redis.pcall("PUBLISH", ARGV[2], ARGV[3])
        end
    end
    return 1
end
return 0
