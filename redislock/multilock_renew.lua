-- Compare-and-pexpire of all the keys or none: extends every key in KEYS
-- only while each still holds the token ARGV[1], and never re-creates one
-- that is gone.
-- KEYS: the lock's keys (of one slot on Redis Cluster). ARGV[1]: the token.
-- ARGV[2]: the expiry in ms.
-- Returns 1 when all were extended, else (and nothing was) -1 when the
-- first key found lost is gone, 0 when it holds another token (taken over).
-- A key that holds something other than a string no longer holds the
-- token: it counts as taken over (checked with TYPE first, so that no
-- WRONGTYPE error reaches go-zero's circuit breaker, which counts every
-- error reply).
for _, key in ipairs(KEYS) do
    local kind = redis.call("TYPE", key).ok
    if kind == "none" then
        return -1
    end
    if kind ~= "string" or redis.call("GET", key) ~= ARGV[1] then
        return 0
    end
end
for _, key in ipairs(KEYS) do
    redis.call("PEXPIRE", key, ARGV[2])
end
return 1
