-- Re-entrant acquire that mints a fencing token. A fresh acquisition
-- increments KEYS[2], a counter in the lock key's slot that never expires,
-- so every token is greater than all issued before for the key; a
-- re-entrant refresh returns the current holder's token unchanged.
-- KEYS[1]: the lock key. KEYS[2]: the counter. ARGV[1]: the token.
-- ARGV[2]: the expiry in ms.
-- Returns {1, fence} when held by ARGV[1] afterwards, else {0, PTTL}.
local held = redis.call("GET", KEYS[1])
if held == ARGV[1] then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    return {1, tonumber(redis.call("GET", KEYS[2]) or "0")}
end
if held == false then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    return {1, redis.call("INCR", KEYS[2])}
end
return {0, redis.call("PTTL", KEYS[1])}
