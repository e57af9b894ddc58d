-- Compare-and-set: replace the hold by a record only while KEYS[1] holds
-- this lock's token, so a holder that lost its lock never overwrites the
-- key another holder took or the result it stored. A key that already
-- holds this very record answers 1 too: a client that resends the call
-- after a lost reply learns that the first send stored it.
-- KEYS[1]: the lock key. ARGV[1]: the token. ARGV[2]: the record.
-- ARGV[3]: how long to keep it, in ms.
-- Returns 1 when stored, else 0.
local held = redis.call("GET", KEYS[1])
if held == ARGV[1] then
    redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
    return 1
end
if held == ARGV[2] then
    return 1
end
return 0
