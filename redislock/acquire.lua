-- Re-entrant acquire: refresh the expiry when KEYS[1] already holds this
-- lock's token, take the key when it is free, and otherwise report the
-- holder's remaining time so a waiter knows how long to sleep.
-- KEYS[1]: the lock key. ARGV[1]: the token. ARGV[2]: the expiry in ms.
-- Returns "OK" when the lock is held by ARGV[1] afterwards, else the PTTL.
local held = redis.call("GET", KEYS[1])
if held == ARGV[1] or held == false then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    return "OK"
end
return redis.call("PTTL", KEYS[1])
