package torture

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestLostLock: an admin connection deletes, overwrites or PEXPIREs a key
// held under the watchdog (1 s expiry, renewal every 100 ms), on a go-redis
// client and on go-zero's store. In every trial the lock's context is
// cancelled with ErrLockLost within one renewal interval plus a 400 ms
// margin, and for three renewal intervals after that the key is neither
// re-created nor overwritten.
func TestLostLock(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	gozero := redislock.GoZeroStore(zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	}))
	stores := map[string]redislock.Store{"go-redis": srv.Client(t), "go-zero": gozero}
	const every, margin = 100 * time.Millisecond, 400 * time.Millisecond
	trials := 2
	if long() {
		trials = 20
	}
	ctx := context.Background()
	tampers := []struct {
		name    string
		tamper  func(key string) error
		present string // the value the key must keep, "" for gone
	}{
		{"deleted", func(key string) error { return admin.Del(ctx, key).Err() }, ""},
		{"overwritten", func(key string) error { return admin.Set(ctx, key, "someone-else", time.Minute).Err() }, "someone-else"},
		{"pexpired", func(key string) error { return admin.PExpire(ctx, key, time.Millisecond).Err() }, ""},
	}
	var worst time.Duration
	detected := 0
	for name, store := range stores {
		for _, tc := range tampers {
			for trial := 0; trial < trials; trial++ {
				key := fmt.Sprintf("torture:lost:%s:%s:%d", name, tc.name, trial)
				lock := redislock.New(store, key, redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
				if ok, err := lock.AcquireCtx(ctx); !ok || err != nil {
					t.Fatalf("%s: AcquireCtx = %v, %v", key, ok, err)
				}
				scripts := redistest.Calls(t, admin, "eval", "evalsha")
				lockCtx := lock.Watch(ctx, zerolock.RenewEvery(every))
				// Tamper after the first renewal, so that none is in flight
				// that could rightly restore a shortened TTL.
				for deadline := time.Now().Add(2 * time.Second); redistest.Calls(t, admin, "eval", "evalsha") == scripts; {
					if time.Now().After(deadline) {
						t.Fatalf("%s: the watchdog never renewed", key)
					}
					time.Sleep(time.Millisecond)
				}
				if err := tc.tamper(key); err != nil {
					t.Fatal(err)
				}
				tampered := time.Now()
				select {
				case <-lockCtx.Done():
				case <-time.After(every + margin):
					t.Fatalf("%s: lock context not cancelled within %v", key, every+margin)
				}
				took := time.Since(tampered)
				if cause := context.Cause(lockCtx); !errors.Is(cause, zerolock.ErrLockLost) {
					t.Fatalf("%s: cause %v, want ErrLockLost", key, cause)
				}
				worst = max(worst, took)
				detected++
				time.Sleep(3 * every) // the window in which no renewal may touch the key
				got, err := admin.Get(ctx, key).Result()
				switch {
				case tc.present == "" && !errors.Is(err, redis.Nil):
					t.Fatalf("%s: the key was re-created: %q, %v", key, got, err)
				case tc.present != "" && got != tc.present:
					t.Fatalf("%s: the key holds %q, want %q untouched", key, got, tc.present)
				}
				if ok, err := lock.ReleaseCtx(ctx); ok || err != nil {
					t.Fatalf("%s: ReleaseCtx of a lost lock = %v, %v, want false", key, ok, err)
				}
				admin.Del(ctx, key)
			}
		}
	}
	record(t, fmt.Sprintf("watchdog renewing every %v a 1 s lock; key deleted, overwritten or PEXPIREd by an admin; %d trials of each on go-redis and on go-zero's store", every, trials),
		fmt.Sprintf("%d losses signalled with ErrLockLost, at most %v after the tampering (limit %v); the key never re-created or overwritten", detected, worst.Round(time.Millisecond), every+margin))
}
