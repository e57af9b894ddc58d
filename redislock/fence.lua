-- Re-entrant acquire that mints a fencing token. A fresh acquisition
-- increments KEYS[2], a counter in the lock key's slot that never expires,
-- so every token is greater than all issued before for the key; a
-- re-entrant refresh returns the current holder's token unchanged.
-- A waiting acquire also passes KEYS[3] and ARGV[3], and may pass ARGV[4]:
-- its refusal marks the hold (or sets the waiter flag), and its win takes
-- the key marked, as acquire.lua's do.
-- KEYS[1]: the lock key. KEYS[2]: the counter. KEYS[3]: the waiter flag,
-- if waiting. ARGV[1]: the token. ARGV[2]: the expiry in ms. ARGV[3]: the
-- flag's in ms. ARGV[4]: "1" to take the key marked.
-- Returns {1, fence} when held by ARGV[1] afterwards, else {0, PTTL}.
local held = redis.call("GET", KEYS[1])
if held == false then
    local value = ARGV[1]
    if ARGV[4] then
        value = string.sub(value, 1, -2) .. "!"
    end
    redis.call("SET", KEYS[1], value, "PX", ARGV[2])
    return {1, redis.call("INCR", KEYS[2])}
end
if held == ARGV[1] or #held == 27 and string.byte(held, 27) == 33
    and string.sub(held, 1, 26) == string.sub(ARGV[1], 1, 26) then
    redis.call("PEXPIRE", KEYS[1], ARGV[2])
    return {1, tonumber(redis.call("GET", KEYS[2]) or "0")}
end
if KEYS[3] then
    if #held == 27 and string.find(held, "^[A-Z2-7]+%.$") then
        redis.pcall("SETRANGE", KEYS[1], 26, "!")
    elseif (#held ~= 27 or string.byte(held, 27) ~= 33)
        and redis.call("PTTL", KEYS[3]) < tonumber(ARGV[3]) then
        redis.call("SET", KEYS[3], "1", "PX", ARGV[3])
    end
end
return {0, redis.call("PTTL", KEYS[1])}
