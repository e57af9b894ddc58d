-- Compare-and-delete: only the holder's token deletes the key, the floor's
-- script when nobody waits: one key, one argument, one read. A hold that a
-- waiter marked (its last character "!" for the token's ".": see
-- acquire.lua) is the holder's too, and its release is announced on the
-- key's release channel, a shard channel in the key's slot: the waiter
-- marked it in the same script that refused it, after it subscribed, so
-- no waiter that sleeps on the channel can miss the release, and a release
-- nobody waits for publishes nothing. Servers before 7.0 lack SPUBLISH and
-- get PUBLISH (waiters subscribe the same way, decided by the same test).
-- The announcement is best effort: a user whose ACL forbids publishing
-- still releases, and its waiters fall back to their back-off. A key that
-- holds another type is not ours: pcall turns GET's WRONGTYPE into a table,
-- which matches no token, and the release answers 0, where a raised
-- WRONGTYPE would be an error reply, which go-zero's circuit breaker
-- counts. (MGET, which reads such a key as missing, builds a table on
-- every release: about 0.3 µs of Redis more than the floor's GET.)
-- The channel is named after the key as internal/hub's Channel names it:
-- "<key>:zerolock.released|1" for a key with a hash tag, else
-- "{<key>}:zerolock.released|2"; a key whose channel needs a computed tag
-- (it has a "}" but no hash tag, or is empty) passes it as ARGV[2].
-- KEYS[1]: the lock key. ARGV[1]: the token. ARGV[2]: the channel when the
-- key cannot name it, "" to announce nothing (WithoutWakeups).
-- Returns 1 when deleted, else 0.
local held = redis.pcall("GET", KEYS[1])
if held == ARGV[1] then
    redis.call("DEL", KEYS[1])
    return 1
end
if type(held) ~= "string" or #held ~= 27 or string.byte(held, 27) ~= 33
    or string.sub(held, 1, 26) ~= string.sub(ARGV[1], 1, 26) then
    return 0
end
redis.call("DEL", KEYS[1])
local channel = ARGV[2]
if channel == nil then
    local key = KEYS[1]
    local open = string.find(key, "{", 1, true)
    local close = open and string.find(key, "}", open + 1, true)
    if close and close > open + 1 then
        channel = key .. ":zerolock.released|1"
    else
        channel = "{" .. key .. "}:zerolock.released|2"
    end
end
if channel ~= "" then
    local sent = redis.pcall("SPUBLISH", channel, "released")
    if type(sent) == "table" and sent.err then
        redis.pcall("PUBLISH", channel, "released")
    end
end
return 1
