-- Re-entrant acquire that mints a fencing token. A fresh acquisition
-- increments KEYS[2], a counter in the lock key's slot that never expires,
-- so every token is greater than all issued before for the key; a
-- re-entrant refresh returns the current holder's token unchanged.
-- A waiting acquire also passes KEYS[3] and ARGV[3]: a refusal sets the
-- waiter flag as acquire.lua does.
-- KEYS[1]: the lock key. KEYS[2]: the counter. KEYS[3]: the waiter flag,
-- if waiting. ARGV[1]: the token. ARGV[2]: the expiry in ms. ARGV[3]: the
-- flag's in ms.
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
if KEYS[3] and redis.call("PTTL", KEYS[3]) < tonumber(ARGV[3]) then
    redis.call("SET", KEYS[3], "1", "PX", ARGV[3])
end
return {0, redis.call("PTTL", KEYS[1])}
