-- Semaphore state, read only: how many permits are live and how long until
-- the earliest of them expires, on the server's clock. Expired permits
-- that no write has dropped yet are not counted.
-- KEYS[1]: the semaphore.
-- Returns {live permits, ms until the earliest live permit expires or 0},
-- or "WRONGTYPE <type>".
-- A key of another type (a RedisLock's, say) is reported, not raised as
-- WRONGTYPE: go-zero's circuit breaker counts every error reply, and one
-- misnamed key must not open it for the whole store.
local kind = redis.call("TYPE", KEYS[1]).ok
if kind ~= "zset" and kind ~= "none" then
    return "WRONGTYPE " .. kind
end
local t = redis.call("TIME")
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local live = redis.call("ZCOUNT", KEYS[1], "(" .. now, "+inf")
if live == 0 then
    return {0, 0}
end
local first = redis.call("ZRANGEBYSCORE", KEYS[1], "(" .. now, "+inf", "WITHSCORES", "LIMIT", 0, 1)
return {live, tonumber(first[2]) - now}
