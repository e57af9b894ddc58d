-- Acquire, or read a stored result: take KEYS[1] when it is free (or
-- refresh it when it already holds this lock's token, marked or not: see
-- acquire.lua); when it holds a record (a value that starts with ARGV[3]),
-- return the record; otherwise report the holder's remaining time.
-- A waiting try (AcquireOrReadWaitCtx) also passes KEYS[2], the key's
-- waiter flag, and ARGV[4], how long the flag must live: a refusal marks
-- the hold as waited on (or sets the flag), in the same script that saw
-- the lock held, so the holder's release (release.lua) or stored record
-- (record.lua) announces itself; with ARGV[5] its win takes the key
-- marked, as acquire.lua's does.
-- KEYS[1]: the lock key. KEYS[2]: the waiter flag, if waiting.
-- ARGV[1]: the token. ARGV[2]: the expiry in ms.
-- ARGV[3]: the record prefix, which no token starts with.
-- ARGV[4]: the flag's expiry in ms, if waiting. ARGV[5]: "1" to take the
-- key marked.
-- Returns "OK" when held by ARGV[1] afterwards, {record} for a record,
-- else the PTTL.
local held = redis.call("GET", KEYS[1])
if held == false then
    local value = ARGV[1]
    if ARGV[5] then
        value = string.sub(value, 1, -2) .. "!"
    end
    redis.call("SET", KEYS[1], value, "PX", ARGV[2])
    return "OK"
end
if held == ARGV[1] or #held == 27 and string.byte(held, 27) == 33
    and string.sub(held, 1, 26) == string.sub(ARGV[1], 1, 26) then
    redis.call("PEXPIRE", KEYS[1], ARGV[2])
    return "OK"
end
if string.sub(held, 1, string.len(ARGV[3])) == ARGV[3] then
    return {held}
end
if KEYS[2] then
    if #held == 27 and string.find(held, "^[A-Z2-7]+%.$") then
        redis.pcall("SETRANGE", KEYS[1], 26, "!")
    elseif (#held ~= 27 or string.byte(held, 27) ~= 33)
        and redis.call("PTTL", KEYS[2]) < tonumber(ARGV[4]) then
        redis.call("SET", KEYS[2], "1", "PX", ARGV[4])
    end
end
return redis.call("PTTL", KEYS[1])
