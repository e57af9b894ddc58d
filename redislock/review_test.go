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

// TestWatchdogHungServer: with the server paused (SIGSTOP), the lock's
// context ends before Redis could have expired the key, although the
// renewal in flight is stuck; Release keeps to its own context.
func TestWatchdogHungServer(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	lock := redislock.New(client, "zerolock-test:hung", redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
	mustAcquire(t, lock, true)
	lockCtx := lock.Watch(context.Background(), zerolock.RenewEvery(100*time.Millisecond))
	time.Sleep(250 * time.Millisecond)
	paused := time.Now() // every renewal the server answered was sent before this
	srv.Pause()
	t.Cleanup(srv.Resume)
	cause := waitDone(t, lockCtx, 3*time.Second)
	if !errors.Is(cause, zerolock.ErrRenewFailed) {
		t.Fatalf("cause = %v, want ErrRenewFailed", cause)
	}
	if late := time.Since(paused); late >= time.Second {
		t.Fatalf("cancelled %v after the server hung: past the 1s the key could live", late)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _ = lock.ReleaseCtx(ctx)
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Fatalf("ReleaseCtx(200ms) on a hung server took %v", d)
	}
}

// TestReleaseWithEndedContextStopsWatchdog: a release that cannot be sent
// still stops the renewals.
func TestReleaseWithEndedContextStopsWatchdog(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key, redislock.WithExpiry(300*time.Millisecond), redislock.WithTolerance(0))
		mustAcquire(t, lock, true)
		lockCtx := lock.Watch(context.Background())
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := lock.ReleaseCtx(ended); !errors.Is(err, context.Canceled) {
			t.Fatalf("ReleaseCtx(canceled) = %v", err)
		}
		if cause := waitDone(t, lockCtx, time.Second); !errors.Is(cause, zerolock.ErrReleased) {
			t.Fatalf("cause = %v, want ErrReleased", cause)
		}
		// No renewal keeps the key alive any more: it expires.
		deadline := time.Now().Add(2 * time.Second)
		for admin.Exists(context.Background(), key).Val() == 1 {
			if time.Now().After(deadline) {
				t.Fatal("the key outlived its 300ms: still renewed after Release")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestWatchOfLockNotHeld: Watch on a lock never acquired, or released and
// since taken by another, ends at once with ErrLockLost.
func TestWatchOfLockNotHeld(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		fresh := b.newLock(key)
		fresh.SetExpire(30)
		if cause := waitDone(t, fresh.Watch(context.Background()), time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
			t.Fatalf("Watch of a lock never acquired: cause %v, want ErrLockLost", cause)
		}
		mustAcquire(t, fresh, true)
		admin.Set(context.Background(), key, "someone-else", time.Minute) // lost before Watch
		if cause := waitDone(t, fresh.Watch(context.Background()), time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
			t.Fatalf("Watch of a lock lost before: cause %v, want ErrLockLost within a second, not after 10s", cause)
		}
		admin.Del(context.Background(), key)
	})
}
