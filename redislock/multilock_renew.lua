-- Compare-and-pexpire of all the keys or none: extends every key in KEYS
-- only while each still holds the token ARGV[1], and never re-creates one
-- that is gone.
-- KEYS: the lock's keys (of one slot on Redis Cluster). ARGV[1]: the token.
-- ARGV[2]: the expiry in ms.
-- Returns 1 when all were extended, else 0 (and nothing was).
-- A key that holds something other than a string no longer holds the
-- token: it counts as lost (checked with TYPE first, so that no WRONGTYPE
-- error reaches go-zero's circuit breaker, which counts every error reply).
for _, key in ipairs(KEYS) do
    if redis.call("TYPE", key).ok ~= "string" or redis.call("GET", key) ~= ARGV[1] then
        return 0
    end
end
for _, key in ipairs(KEYS) do
    redis.call("PEXPIRE", key, ARGV[2])
end
return 1
