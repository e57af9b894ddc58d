-- Write unlock: compare-and-delete of the key. The release is announced
-- with ARGV[3], the payload that wakes every waiter (readers share the
-- lock, so all of them may proceed), on ARGV[2], as release.lua announces:
-- SPUBLISH, or PUBLISH before Redis 7.0, best effort. Without ARGV[2]
-- (WithoutWakeups) nothing is announced.
-- KEYS[1]: the lock key. ARGV[1]: the token. ARGV[2]: the channel, if any.
-- ARGV[3]: the payload.
-- Returns 1 when deleted, else 0, or "WRONGTYPE <type> <key>" when the key
-- holds a value of another type (reported, not raised: go-zero's circuit
-- breaker counts every error reply).
local kind = redis.call("TYPE", KEYS[1]).ok
if kind ~= "string" and kind ~= "none" then
    return "WRONGTYPE " .. kind .. " " .. KEYS[1]
end
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
