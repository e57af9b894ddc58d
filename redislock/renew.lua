-- Compare-and-pexpire: extends the lock only while it holds this token
-- (marked by a waiter or not: see acquire.lua), and never re-creates a key
-- that is gone.
-- KEYS[1]: the lock key. ARGV[1]: the token. ARGV[2]: the expiry in ms.
-- Returns 1 when extended, -1 when the key is gone, 0 when it holds
-- another token or another type (the lock was taken over).
-- MGET, not GET: a key of another type reads as missing instead of raising
-- WRONGTYPE, an error reply that go-zero's circuit breaker counts and that
-- would keep a watchdog retrying until its renewals failed, where the
-- lock is plainly lost.
local value = redis.call("MGET", KEYS[1])[1]
if value == ARGV[1] or value and #value == 27 and string.byte(value, 27) == 33
    and string.sub(value, 1, 26) == string.sub(ARGV[1], 1, 26) then
    return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
if not value and redis.call("EXISTS", KEYS[1]) == 0 then
    return -1
end
return 0
