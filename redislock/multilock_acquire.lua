-- All or nothing: take every key in KEYS for the token ARGV[1] when none of
-- them holds another token, refreshing those that already hold ours
-- (re-entrant); otherwise write nothing and tell which key refused and its
-- remaining time, so a waiter listens for that key's release and sleeps no
-- longer than its hold. Each key is held as a RedisLock holds it: a string
-- with the token and an expiry.
-- A waiting acquire also passes, after the lock's keys, each key's waiter
-- flag, and ARGV[3], how long a flag must live: the refusing key's hold is
-- marked as waited on, or its flag set, as acquire.lua does, so that its
-- holder's release announces itself (a RedisLock's, or another
-- MultiLock's, which announces every release). A multi-lock's own token
-- is never marked: its scripts compare it exactly.
-- KEYS: the lock's keys (of one slot on Redis Cluster), then, when
-- waiting, their waiter flags in the same order. ARGV[1]: the token.
-- ARGV[2]: the expiry in ms. ARGV[3]: the flags' in ms, when waiting.
-- Returns 0 when every key was free and holds ARGV[1] afterwards; {0, i...}
-- when some already held ARGV[1] and were refreshed, listing the others
-- (1-based), free and taken now, so that the caller gives back only what
-- this call took; {i, PTTL} of the first key held by another; or
-- "WRONGTYPE <i> <type>" for the first key that holds something other than
-- a string.
-- Every key's type is checked before anything is read or written: a key of
-- another type (a semaphore's, say) is reported, not raised as WRONGTYPE,
-- because go-zero's circuit breaker counts every error reply, and one
-- misconfigured key would open it for the whole store.
local n = #KEYS
if ARGV[3] then
    n = n / 2
end
local taken = {0}
for i = 1, n do
    local kind = redis.call("TYPE", KEYS[i]).ok
    if kind == "none" then
        taken[#taken + 1] = i
    elseif kind ~= "string" then
        return "WRONGTYPE " .. i .. " " .. kind
    end
end
for i = 1, n do
    local held = redis.call("GET", KEYS[i])
    if held and held ~= ARGV[1] then
        local flag = KEYS[n + i]
        if flag and #held == 27 and string.find(held, "^[A-Z2-7]+%.$") then
            redis.pcall("SETRANGE", KEYS[i], 26, "!")
        elseif flag and (#held ~= 27 or string.byte(held, 27) ~= 33)
            and redis.call("PTTL", flag) < tonumber(ARGV[3]) then
            redis.call("SET", flag, "1", "PX", ARGV[3])
        end
        return {i, redis.call("PTTL", KEYS[i])}
    end
end
for i = 1, n do
    redis.call("SET", KEYS[i], ARGV[1], "PX", ARGV[2])
end
if #taken == n + 1 then
    return 0
end
return taken
