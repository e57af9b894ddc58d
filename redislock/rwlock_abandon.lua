-- A waiting writer gives up: compare-and-delete of its intent, and, when
-- it was there, wake the readers it held back (ARGV[3] on ARGV[2], as
-- rwlock_unlock.lua announces).
-- KEYS[1]: the lock key, only so that a go-redis Ring runs this script on
-- the shard where rwlock_lock.lua ran (it routes by the first key).
-- KEYS[2]: the intent. ARGV[1]: the token. ARGV[2]: the channel, if any.
-- ARGV[3]: the payload.
-- Returns 1 when deleted, else 0, or "WRONGTYPE <type> <key>" when the
-- intent holds a value of another type (reported, not raised: go-zero's
-- circuit breaker counts every error reply).
local kind = redis.call("TYPE", KEYS[2]).ok
if kind ~= "string" and kind ~= "none" then
    return "WRONGTYPE " .. kind .. " " .. KEYS[2]
end
if redis.call("GET", KEYS[2]) == ARGV[1] then
    redis.call("DEL", KEYS[2])
    if ARGV[2] then
        local sent = redis.pcall("SPUBLISH", ARGV[2], ARGV[3])
        if type(sent) == "table" and sent.err then
            redis.pcall("PUBLISH", ARGV[2], ARGV[3])
        end
    end
    return 1
end
return 0
