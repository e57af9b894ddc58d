-- Re-entrant acquire: refresh the expiry when KEYS[1] already holds this
-- lock's token, take the key when it is free, and otherwise report the
-- holder's remaining time so a waiter knows how long to sleep.
-- A waiting acquire also passes KEYS[2], the key's waiter flag (a key in
-- its slot), and ARGV[3], how long the flag must live: a refusal sets the
-- flag, in the same script that saw the lock held, so the holder's release
-- (release.lua) announces itself; the flag's expiry is only ever extended,
-- since other waiters may sleep longer than this one.
-- KEYS[1]: the lock key. KEYS[2]: the waiter flag, if waiting.
-- ARGV[1]: the token. ARGV[2]: the expiry in ms. ARGV[3]: the flag's in ms.
-- Returns "OK" when the lock is held by ARGV[1] afterwards, else the PTTL.
local held = redis.call("GET", KEYS[1])
if held == ARGV[1] or held == false then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    return "OK"
end
if KEYS[2] and redis.call("PTTL", KEYS[2]) < tonumber(ARGV[3]) then
    redis.call("SET", KEYS[2], "1", "PX", ARGV[3])
end
return redis.call("PTTL", KEYS[1])
