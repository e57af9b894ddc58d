-- Acquire, or read a stored result: take KEYS[1] when it is free (or
-- refresh it when it already holds this lock's token); when it holds a
-- record (a value that starts with ARGV[3]), return the record; otherwise
-- report the holder's remaining time.
-- A waiting try (AcquireOrReadWaitCtx) also passes KEYS[2], the key's
-- waiter flag, and ARGV[4], how long the flag must live: a refusal sets
-- the flag, in the same script that saw the lock held, so the holder's
-- release (release.lua) or stored record (record.lua) announces itself.
-- KEYS[1]: the lock key. KEYS[2]: the waiter flag, if waiting.
-- ARGV[1]: the token. ARGV[2]: the expiry in ms.
-- ARGV[3]: the record prefix, which no token starts with.
-- ARGV[4]: the flag's expiry in ms, if waiting.
-- Returns "OK" when held by ARGV[1] afterwards, {record} for a record,
-- else the PTTL.
local held = redis.call("GET", KEYS[1])
if held == ARGV[1] or held == false then
    redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
    return "OK"
end
if string.sub(held, 1, string.len(ARGV[3])) == ARGV[3] then
    return {held}
end
if KEYS[2] and redis.call("PTTL", KEYS[2]) < tonumber(ARGV[4]) then
    redis.call("SET", KEYS[2], "1", "PX", ARGV[4])
end
return redis.call("PTTL", KEYS[1])
