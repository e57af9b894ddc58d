-- Compare-and-set: replace the hold by a record only while KEYS[1] holds
-- this lock's token (marked by a waiter or not: see acquire.lua), so a
-- holder that lost its lock never overwrites the key another holder took
-- or the result it stored. A key that already holds this very record
-- answers 1 too: a client that resends the call after a lost reply learns
-- that the first send stored it.
-- A lock whose waiters must be woken (not WithoutWakeups, or made with
-- LockerOptions.Waited) also passes ARGV[4], the release channel: a record
-- that replaces a marked hold is announced to every waiter (ARGV[5], the
-- wake-all payload): a record answers them all, where a release wakes one,
-- since one waiter takes the lock. A waiting duplicate (acquireread.lua)
-- reads it at once.
-- KEYS[1]: the lock key. ARGV[1]: the token. ARGV[2]: the record.
-- ARGV[3]: how long to keep it, in ms. ARGV[4]: the channel, if any.
-- ARGV[5]: the payload that wakes every waiter, with ARGV[4].
-- Returns 1 when stored, else 0.
local held = redis.call("GET", KEYS[1])
local marked = false
if held ~= ARGV[1] then
    marked = held and #held == 27 and string.byte(held, 27) == 33
        and string.sub(held, 1, 26) == string.sub(ARGV[1], 1, 26)
    if not marked then
        if held == ARGV[2] then
            return 1
        end
        return 0
    end
end
redis.call("SET", KEYS[1], ARGV[2], "PX", ARGV[3])
if marked and ARGV[4] then
    local sent = redis.pcall("SPUBLISH", ARGV[4], ARGV[5])
    if type(sent) == "table" and sent.err then
        redis.pcall("PUBLISH", ARGV[4], ARGV[5])
    end
end
return 1
