-- Compare-and-delete: only the holder's token deletes the key.
-- KEYS[1]: the lock key. ARGV[1]: the token. Returns 1 when deleted, else 0.
if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("DEL", KEYS[1])
end
return 0
