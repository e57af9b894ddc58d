package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// Refresh extends only this instance's hold, on go-zero's store and on
// go-redis: a held lock's expiry is reset; a lost one (deleted, or taken by
// another holder) is reported false and never re-created or touched; an
// instance that never held gets false.
func TestRefresh(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		lock := b.newLock(key, redislock.WithExpiry(2*time.Second), redislock.WithTolerance(0))
		mustAcquire(t, lock, true)

		// Nearly expired: a refresh resets the full expiry.
		if err := admin.PExpire(ctx, key, 100*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := lock.RefreshCtx(ctx); !ok || err != nil {
			t.Fatalf("RefreshCtx of a held lock = %v, %v; want true", ok, err)
		}
		if ttl := admin.PTTL(ctx, key).Val(); ttl <= time.Second || ttl > 2*time.Second {
			t.Fatalf("PTTL after refresh = %v, want the 2 s expiry again", ttl)
		}

		// Lost: the key is gone. Refresh must not re-create it.
		admin.Del(ctx, key)
		if ok, err := lock.RefreshCtx(ctx); ok || err != nil {
			t.Fatalf("RefreshCtx of a deleted lock = %v, %v; want false, nil", ok, err)
		}
		if admin.Exists(ctx, key).Val() != 0 {
			t.Fatal("RefreshCtx re-created a vanished key")
		}

		// Lost and regained by another holder: Refresh leaves theirs alone.
		other := b.newLock(key, redislock.WithExpiry(time.Minute))
		mustAcquire(t, other, true)
		before := admin.Get(ctx, key).Val()
		if ok, err := lock.RefreshCtx(ctx); ok || err != nil {
			t.Fatalf("RefreshCtx of a lock another holder has = %v, %v; want false, nil", ok, err)
		}
		if after := admin.Get(ctx, key).Val(); after != before {
			t.Fatal("RefreshCtx changed another holder's key")
		}
		mustRelease(t, other, true)

		never := b.newLock(key, redislock.WithExpiry(time.Second))
		if ok, err := never.Refresh(); ok || err != nil {
			t.Fatalf("Refresh of a lock never acquired = %v, %v; want false, nil", ok, err)
		}
		bad := b.newLock(key, redislock.WithExpiry(-time.Second), redislock.WithTolerance(0))
		if _, err := bad.Refresh(); !errors.Is(err, redislock.ErrInvalidExpiry) {
			t.Fatalf("Refresh with a negative expiry = %v, want ErrInvalidExpiry", err)
		}
	})
}

// Refresh on Redis Cluster, for keys in several slots.
func TestRefreshCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	ctx := context.Background()
	for _, b := range clusterBackends(t, c) {
		t.Run(b.name, func(t *testing.T) {
			for _, key := range []string{"zerolock-test:refresh:a", "zerolock-test:refresh:b", "zerolock-test:refresh:{c}"} {
				lock := b.newLock(key+":"+b.name, redislock.WithExpiry(time.Second))
				mustAcquire(t, lock, true)
				if ok, err := lock.RefreshCtx(ctx); !ok || err != nil {
					t.Fatalf("RefreshCtx on the cluster = %v, %v", ok, err)
				}
				mustRelease(t, lock, true)
				if ok, err := lock.RefreshCtx(ctx); ok || err != nil {
					t.Fatalf("RefreshCtx after release = %v, %v; want false, nil", ok, err)
				}
			}
		})
	}
}

// TestRenewOverAnotherType: when a held lock's key is replaced by a value
// of another type (a hash), RefreshCtx answers false, nil, and a watchdog
// ends at its next renewal with ErrLockLost, on go-zero's store and on
// go-redis, for a RedisLock and an RWLock's write side; Redis answers no
// WRONGTYPE (INFO errorstats), an error reply go-zero's breaker counts.
// Before, renew.lua's GET raised WRONGTYPE: RefreshCtx returned that
// error, and the watchdog retried until ErrRenewFailed near the expiry.
func TestRenewOverAnotherType(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		replace := func(key string) {
			t.Helper()
			if err := admin.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if err := admin.HSet(ctx, key, "f", "v").Err(); err != nil {
				t.Fatal(err)
			}
		}
		wrongTypes := func() int64 { return redistest.ErrorCount(t, admin, "WRONGTYPE") }
		before := wrongTypes()

		lock := b.newLock(key, redislock.WithExpiry(3*time.Second), redislock.WithTolerance(0))
		mustAcquire(t, lock, true)
		replace(key)
		if ok, err := lock.RefreshCtx(ctx); ok || err != nil {
			t.Fatalf("RefreshCtx over a hash = %v, %v; want false, nil", ok, err)
		}

		rw := redislock.NewRWLock(b.store(), key+":rw", redislock.WithExpiry(3*time.Second), redislock.WithTolerance(0))
		if ok, err := rw.LockCtx(ctx); !ok || err != nil {
			t.Fatalf("RWLock LockCtx = %v, %v", ok, err)
		}
		replace(key + ":rw")
		if ok, err := rw.RefreshCtx(ctx); ok || err != nil {
			t.Fatalf("RWLock RefreshCtx over a hash = %v, %v; want false, nil", ok, err)
		}

		watched := b.newLock(key+":watched", redislock.WithExpiry(3*time.Second), redislock.WithTolerance(0))
		mustAcquire(t, watched, true)
		lockCtx := watched.Watch(ctx, zerolock.RenewEvery(100*time.Millisecond))
		replace(key + ":watched")
		// Lost at the next renewal; ErrRenewFailed would come only near
		// the 3 s expiry.
		if cause := waitDone(t, lockCtx, 2*time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
			t.Fatalf("watchdog's cause over a hash = %v; want ErrLockLost", cause)
		}
		if n := wrongTypes() - before; n != 0 {
			t.Fatalf("Redis answered WRONGTYPE %d times", n)
		}
	})
}
