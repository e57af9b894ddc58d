-- All or nothing: take every key in KEYS for the token ARGV[1] when none of
-- them holds another token, refreshing those that already hold ours
-- (re-entrant); otherwise write nothing and tell which key refused and its
-- remaining time, so a waiter listens for that key's release and sleeps no
-- longer than its hold. Each key is held as a RedisLock holds it: a string
-- with the token and an expiry.
-- KEYS: the lock's keys (of one slot on Redis Cluster). ARGV[1]: the token.
-- ARGV[2]: the expiry in ms.
-- Returns 0 when every key holds ARGV[1] afterwards, else {i, PTTL} of the
-- first key (1-based) held by another.
for i, key in ipairs(KEYS) do
    local held = redis.call("GET", key)
    if held and held ~= ARGV[1] then
        return {i, redis.call("PTTL", key)}
    end
end
for _, key in ipairs(KEYS) do
    redis.call("SET", key, ARGV[1], "PX", ARGV[2])
end
return 0
