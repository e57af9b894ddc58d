package floor

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The floors of the other primitives: what any correct implementation
// sends at least, one script (or command) to take and one to give back,
// with none of zerolock's bookkeeping (no expired-share purge, no
// re-entrance, no wake-up, no fencing). The benchmarks measure each
// primitive's cycle against its floor on the same client.
var (
	// SemAcquire adds ARGV[1] to the set KEYS[1] while it has fewer than
	// ARGV[2] members, scored with ARGV[3] (an expiry the client computed).
	SemAcquire = redis.NewScript(`if redis.call("ZCARD", KEYS[1]) < tonumber(ARGV[2]) then
    redis.call("ZADD", KEYS[1], ARGV[3], ARGV[1])
    return 1
end
return 0`)

	// MultiAcquire sets every key of KEYS to ARGV[1] for ARGV[2] ms when
	// none exists.
	MultiAcquire = redis.NewScript(`for _, k in ipairs(KEYS) do
    if redis.call("EXISTS", k) == 1 then return 0 end
end
for _, k in ipairs(KEYS) do
    redis.call("SET", k, ARGV[1], "PX", ARGV[2])
end
return 1`)

	// MultiRelease deletes every key of KEYS that holds ARGV[1].
	MultiRelease = redis.NewScript(`local n = 0
for _, k in ipairs(KEYS) do
    if redis.call("GET", k) == ARGV[1] then n = n + redis.call("DEL", k) end
end
return n`)

	// ReadAcquire adds reader ARGV[1] to the set KEYS[2] unless the writer
	// key KEYS[1] exists.
	ReadAcquire = redis.NewScript(`if redis.call("EXISTS", KEYS[1]) == 1 then return 0 end
redis.call("ZADD", KEYS[2], ARGV[2], ARGV[1])
return 1`)

	// WriteAcquire sets the writer key KEYS[1] to ARGV[1] for ARGV[2] ms
	// when it is free and the reader set KEYS[2] is empty.
	WriteAcquire = redis.NewScript(`if redis.call("ZCARD", KEYS[2]) > 0 then return 0 end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return 1 end
return 0`)
)

// Load caches every floor script on c, as any lock would have them.
func Load(ctx context.Context, c *redis.Client) error {
	for _, s := range []*redis.Script{Release, SemAcquire, MultiAcquire, MultiRelease, ReadAcquire, WriteAcquire} {
		if err := s.Load(ctx, c).Err(); err != nil {
			return err
		}
	}
	return nil
}

// SemCycle takes one of permits permits of key with token (SemAcquire) and,
// when it got one, gives it back (ZREM).
func SemCycle(ctx context.Context, c *redis.Client, key, token string, permits int, ttl time.Duration) (bool, error) {
	until := strconv.FormatInt(time.Now().Add(ttl).UnixMilli(), 10)
	n, err := SemAcquire.EvalSha(ctx, c, []string{key}, token, permits, until).Int()
	if err != nil || n == 0 {
		return false, err
	}
	return true, c.ZRem(ctx, key, token).Err()
}

// MultiCycle takes all keys with token (MultiAcquire) and, when it got
// them, releases them (MultiRelease).
func MultiCycle(ctx context.Context, c *redis.Client, keys []string, token string, ttl time.Duration) (bool, error) {
	n, err := MultiAcquire.EvalSha(ctx, c, keys, token, ttl.Milliseconds()).Int()
	if err != nil || n == 0 {
		return false, err
	}
	return true, MultiRelease.EvalSha(ctx, c, keys, token).Err()
}

// ReadCycle takes a read share of the writer key and reader set (ReadAcquire)
// and, when it got it, gives it back (ZREM).
func ReadCycle(ctx context.Context, c *redis.Client, writer, readers, token string, ttl time.Duration) (bool, error) {
	until := strconv.FormatInt(time.Now().Add(ttl).UnixMilli(), 10)
	n, err := ReadAcquire.EvalSha(ctx, c, []string{writer, readers}, token, until).Int()
	if err != nil || n == 0 {
		return false, err
	}
	return true, c.ZRem(ctx, readers, token).Err()
}

// WriteCycle takes the writer key (WriteAcquire) and, when it got it,
// releases it (Release).
func WriteCycle(ctx context.Context, c *redis.Client, writer, readers, token string, ttl time.Duration) (bool, error) {
	n, err := WriteAcquire.EvalSha(ctx, c, []string{writer, readers}, token, ttl.Milliseconds()).Int()
	if err != nil || n == 0 {
		return false, err
	}
	return true, Release.EvalSha(ctx, c, []string{writer}, token).Err()
}
