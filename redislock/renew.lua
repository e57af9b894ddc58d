-- Compare-and-pexpire: extends the lock only while it holds this token, and
-- never re-creates a key that is gone.
-- KEYS[1]: the lock key. ARGV[1]: the token. ARGV[2]: the expiry in ms.
-- Returns 1 when extended, else 0.
if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
