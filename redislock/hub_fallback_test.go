package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// Waiting on stores that cannot carry the hub's wake-ups (internal/hub): the
// waiters fall back on back-off alone, and nothing else fails.

// TestReleaseWithoutPublishRights: Redis 7 gives new ACL users no channel
// rights; their releases must still succeed (waiters then rely on back-off).
func TestReleaseWithoutPublishRights(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	if err := admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all", "resetchannels").Err(); err != nil {
		t.Fatal(err)
	}
	app := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "app", Password: "pw"})
	t.Cleanup(func() { _ = app.Close() })
	lock := redislock.New(app, "zerolock-test:acl")
	lock.SetExpire(5)
	mustAcquire(t, lock, true)
	mustRelease(t, lock, true)
	// A waiter under the same user cannot subscribe either: back-off gets it.
	holder := redislock.New(app, "zerolock-test:acl", redislock.WithExpiry(200*time.Millisecond), redislock.WithTolerance(0))
	mustAcquire(t, holder, true)
	waiter := redislock.New(app, "zerolock-test:acl")
	waiter.SetExpire(5)
	if ok, err := waiter.AcquireWaitCtx(context.Background(), 5*time.Second); !ok || err != nil {
		t.Fatalf("AcquireWait without channel rights = %v, %v", ok, err)
	}
	mustRelease(t, waiter, true)
}

// TestRingStore: a Ring cannot carry release notifications (its
// subscription sits on one shard); waiting works on back-off alone.
func TestRingStore(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr(), "b": b.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	holder := redislock.New(ring, "zerolock-test:ring", redislock.WithExpiry(200*time.Millisecond), redislock.WithTolerance(0))
	mustAcquire(t, holder, true)
	waiter := redislock.New(ring, "zerolock-test:ring")
	waiter.SetExpire(5)
	if ok, err := waiter.AcquireWaitCtx(context.Background(), 5*time.Second); !ok || err != nil {
		t.Fatalf("AcquireWait on a Ring = %v, %v", ok, err)
	}
	mustRelease(t, waiter, true)
}
