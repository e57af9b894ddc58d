-- Rate count, a sliding log: KEYS[1] is a sorted set of the admissions of
-- the last period, each member unique to its request, each scored by the
-- time it was admitted, in microseconds on the server's clock (TIME), never
-- a client's. Admissions a period old or older are dropped first; the
-- request is admitted while fewer than ARGV[1] are left, so no
-- period-long window ever holds more than ARGV[1] admissions, and a fresh
-- key admits ARGV[1] at once. The key costs one entry per admission of
-- the last period (O(quota)), and expires a period after its newest.
-- KEYS[1]: the log. ARGV[1]: the quota. ARGV[2]: the period in us.
-- ARGV[3]: the request's member, unique to it.
-- Returns {admitted 1 or 0, admissions left after this one, us until a
-- request would be admitted (0 when admitted), us until the log is empty,
-- the time this request was counted at in us}, or "WRONGTYPE <type>".
-- A member already present is a resend of a request this script admitted
-- (go-redis resends a command whose reply was lost): it is admitted again
-- and not counted twice.
-- A key of another type is reported, not raised as WRONGTYPE: go-zero's
-- circuit breaker counts every error reply, and one misnamed key must not
-- open it for the whole store.
-- Effects replication, so that TIME may come before the writes on Redis
-- 3.2 to 4 (and 5 to 6 configured otherwise); Redis 5 and later replicate
-- effects by default, and 7 accepts the call as a no-op.
redis.replicate_commands()
local quota = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
-- pcall, not a TYPE call before it: the key's type is read only when it
-- is wrong, keeping the usual request to the calls it needs. Any other
-- error (READONLY after a failover, NOPERM, MISCONF) is returned as the
-- error it is, for the client to see.
local newest = redis.pcall("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")
if newest.err then
    if string.sub(newest.err, 1, 9) == "WRONGTYPE" then
        return "WRONGTYPE " .. redis.call("TYPE", KEYS[1]).ok
    end
    return newest
end
-- The newest admission's time, or now for an empty log.
local last = now
if newest[2] then
    last = tonumber(newest[2])
    if last > now and last - now < period then
        -- The server's clock reads less than the newest admission's time
        -- by under a period (TIME is the wall clock: a small step back,
        -- or readings that disagree by microseconds): time is taken to
        -- stand still at that admission, so admissions are logged in the
        -- order they were made and the bound holds on the times logged. A
        -- longer step back is taken as it is: admissions logged before it
        -- count until a period after the time they were logged at.
        now = last
    end
end
redis.call("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - period)
local count = redis.call("ZCARD", KEYS[1])
if count < quota then
    -- Until the log is empty: a period after its newest admission, this
    -- one, or one logged later if the clock stepped back by a period or
    -- more.
    local reset = math.max(last, now) + period - now
    -- NX: a member already present is a resend, admitted again with its
    -- first admission's time kept and counted once.
    if redis.call("ZADD", KEYS[1], "NX", now, ARGV[3]) == 0 then
        return {1, quota - count, 0, reset, now}
    end
    redis.call("PEXPIRE", KEYS[1], math.ceil(reset / 1000))
    return {1, quota - count - 1, 0, reset, now}
end
-- The log is full, so its newest admission is in it.
local reset = last + period - now
if redis.call("ZSCORE", KEYS[1], ARGV[3]) then
    return {1, 0, 0, reset, now}
end
-- Refused: the request would be admitted once the admissions before the
-- quota-th newest have left the window.
local freeing = redis.call("ZRANGE", KEYS[1], count - quota, count - quota, "WITHSCORES")
return {0, 0, tonumber(freeing[2]) + period - now, reset, now}
