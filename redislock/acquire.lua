-- Re-entrant acquire: refresh the expiry when KEYS[1] already holds this
-- lock's token, take the key when it is free, and otherwise report the
-- holder's remaining time so a waiter knows how long to sleep.
-- A waiting acquire also passes KEYS[2], the key's waiter flag, and
-- ARGV[3], how long the flag must live. Its refusal marks the hold as
-- waited on, in the same script that saw it held, so that the holder's
-- release (release.lua) announces itself: a lock token (26 base32
-- characters and a ".", nothing else) gets "!" for its last character,
-- which keeps the value's expiry and which its holder's scripts accept as
-- its own (by pcall: a user whose ACL forbids SETRANGE waits on its
-- back-off, as one that cannot subscribe does); any other hold
-- (an older version's token, which compares exactly) gets the waiter flag
-- instead, whose expiry is only ever extended, since other waiters may
-- sleep longer than this one. ARGV[4], set by a waiting acquire that wakes
-- its peers, takes the key marked: others were waiting with it, and a
-- process wakes one waiter per release.
-- KEYS[1]: the lock key. KEYS[2]: the waiter flag, if waiting.
-- ARGV[1]: the token. ARGV[2]: the expiry in ms. ARGV[3]: the flag's in ms.
-- ARGV[4]: "1" to take the key marked.
-- Returns "OK" when the lock is held by ARGV[1] afterwards, else the PTTL.
local held = redis.call("GET", KEYS[1])
if held == false then
    local value = ARGV[1]
    if ARGV[4] then
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
if KEYS[2] then
    if #held == 27 and string.find(held, "^[A-Z2-7]+%.$") then
        redis.pcall("SETRANGE", KEYS[1], 26, "!")
    elseif (#held ~= 27 or string.byte(held, 27) ~= 33)
        and redis.call("PTTL", KEYS[2]) < tonumber(ARGV[3]) then
        redis.call("SET", KEYS[2], "1", "PX", ARGV[3])
    end
end
return redis.call("PTTL", KEYS[1])
