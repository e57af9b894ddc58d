-- Compare-and-pexpire: extends the lock only while it holds this token, and
-- never re-creates a key that is gone.
-- KEYS[1]: the lock key. ARGV[1]: the token. ARGV[2]: the expiry in ms.
-- Returns 1 when extended, -1 when the key is gone, 0 when it holds
-- another token (the lock was taken over).
local value = redis.call("GET", KEYS[1])
if value == ARGV[1] then
    return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
if not value then
    return -1
end
return 0
