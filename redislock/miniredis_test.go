package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/redislock"
)

// Fast unit tests on miniredis, which does not expire keys by itself:
// FastForward moves its clock.

func TestMiniredisExpiry(t *testing.T) {
	mr := miniredis.RunT(t)
	store := zredis.New(mr.Addr(), zredis.WithIdentity())
	a := redislock.NewRedisLock(store, "k")
	a.SetExpire(1)
	b := redislock.NewRedisLock(store, "k")
	b.SetExpire(1)

	mustAcquire(t, a, true)
	if ttl := mr.TTL("k"); ttl != 1500*time.Millisecond {
		t.Fatalf("PTTL = %v, want 1.5s", ttl)
	}
	mustAcquire(t, b, false)
	mr.FastForward(1499 * time.Millisecond)
	mustAcquire(t, b, false)
	mr.FastForward(time.Millisecond)
	mustAcquire(t, b, true)
	mustRelease(t, a, false)
	mustRelease(t, b, true)
}

func TestMiniredisStoreErrorsAreWrapped(t *testing.T) {
	mr := miniredis.RunT(t)
	client := redis.NewClient(&redis.Options{Addr: mr.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	lock := redislock.New(client, "k")
	mr.SetError("READONLY You can't write against a read only replica.")
	_, err := lock.Acquire()
	var redisErr redis.Error
	if !errors.As(err, &redisErr) {
		t.Fatalf("Acquire error %v does not wrap the redis error", err)
	}
	if _, err := lock.TTL(context.Background()); err == nil {
		t.Fatal("TTL with a failing server returned no error")
	}
}

func TestMiniredisExpiryRoundsUpToMilliseconds(t *testing.T) {
	mr := miniredis.RunT(t)
	store := zredis.New(mr.Addr(), zredis.WithIdentity())
	lock := redislock.NewRedisLock(store, "k", redislock.WithTolerance(0))
	lock.SetExpiry(1001 * time.Microsecond)
	mustAcquire(t, lock, true)
	if ttl := mr.TTL("k"); ttl != 2*time.Millisecond {
		t.Fatalf("TTL for 1.001ms = %v, want 2ms (rounded up, never down)", ttl)
	}
}
