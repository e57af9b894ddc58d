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
-- the server's now in us, or, for a request newly admitted at a later time
-- than now (see below), that time}, or "WRONGTYPE <type>".
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
local dropped = redis.pcall("ZREMRANGEBYSCORE", KEYS[1], "-inf", now - period)
if type(dropped) == "table" and dropped.err then
    if string.sub(dropped.err, 1, 9) == "WRONGTYPE" then
        return "WRONGTYPE " .. redis.call("TYPE", KEYS[1]).ok
    end
    return dropped
end
local count = redis.call("ZCARD", KEYS[1])
-- The newest admission's time, nil for an empty log.
local newest = tonumber(redis.call("ZRANGE", KEYS[1], -1, -1, "WITHSCORES")[2])
if count < quota then
    -- The admission's time: now, unless the clock reads earlier than the
    -- newest admission by under a period (TIME is the wall clock: a small
    -- step back, or readings that disagree by microseconds); then that
    -- admission's time, so that such readings never take the times logged
    -- back and no period-long window of them holds more than the quota.
    -- Dropping, RetryAfter, Reset and the expiry count from now: a later
    -- time only keeps an admission counted longer. A clock read a period
    -- or more earlier is taken as it is: admissions logged before count
    -- until a period after their time, so the bound holds on the time
    -- that passes.
    local at = now
    if newest and newest > now and newest - now < period then
        at = newest
    end
    -- NX: a member already present is a resend, admitted again with its
    -- first admission's time kept and counted once.
    if redis.call("ZADD", KEYS[1], "NX", at, ARGV[3]) == 0 then
        return {1, quota - count, 0, newest + period - now, now}
    end
    -- The key outlives its newest admission's period, which is this one's
    -- unless the clock went back by a period or more since an earlier.
    local reset = math.max(at, newest or at) + period - now
    redis.call("PEXPIRE", KEYS[1], math.ceil(reset / 1000))
    return {1, quota - count - 1, 0, reset, at}
end
if redis.call("ZSCORE", KEYS[1], ARGV[3]) then
    return {1, 0, 0, newest + period - now, now}
end
-- Refused: the request would be admitted once the admissions before the
-- quota-th newest have left the window.
local freeing = redis.call("ZRANGE", KEYS[1], count - quota, count - quota, "WITHSCORES")
return {0, 0, tonumber(freeing[2]) + period - now, newest + period - now, now}
