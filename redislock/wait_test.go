package redislock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// waitForSubscribers polls PUBSUB SHARDNUMSUB until the lock's release
// channel has n subscribers.
func waitForSubscribers(t *testing.T, admin *redis.Client, key string, n int64) {
	t.Helper()
	ch := redislock.ReleaseChannel(key)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		counts, err := admin.PubSubShardNumSub(context.Background(), ch).Result()
		if err == nil && counts[ch] == n {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("release channel never had %d subscribers", n)
}

// TestWaiterWakesOnRelease: a waiter whose back-off alone would sleep for
// about a second acquires within milliseconds of the release, so it was the
// release notification that woke it.
func TestWaiterWakesOnRelease(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		holder := b.newLock(key)
		holder.SetExpire(10)
		mustAcquire(t, holder, true)

		waiter := b.newLock(key, redislock.WithBackoff(time.Second, 2*time.Second))
		waiter.SetExpire(10)
		got := make(chan time.Time, 1)
		go func() {
			ok, err := waiter.AcquireWaitCtx(context.Background(), 10*time.Second)
			if !ok || err != nil {
				t.Errorf("AcquireWaitCtx() = %v, %v", ok, err)
			}
			got <- time.Now()
		}()
		waitForSubscribers(t, admin, key, 1)
		time.Sleep(50 * time.Millisecond) // let the waiter's try fail and its back-off start
		released := time.Now()
		mustRelease(t, holder, true)
		acquired := <-got
		if d := acquired.Sub(released); d > 200*time.Millisecond {
			t.Fatalf("waiter acquired %v after the release; back-off, not the notification, woke it", d)
		}
		mustRelease(t, waiter, true)
		waitForSubscribers(t, admin, key, 0) // the last waiter unsubscribed
	})
}

// TestWaiterGetsExpiredLock: a holder that never releases is outlasted;
// the waiter sleeps no longer than the holder's remaining time.
func TestWaiterGetsExpiredLock(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		holder := b.newLock(key, redislock.WithExpiry(300*time.Millisecond), redislock.WithTolerance(0))
		start := time.Now()
		mustAcquire(t, holder, true)
		waiter := b.newLock(key, redislock.WithBackoff(5*time.Second, 5*time.Second))
		waiter.SetExpire(5)
		ok, err := waiter.AcquireWaitCtx(context.Background(), 5*time.Second)
		elapsed := time.Since(start)
		if !ok || err != nil {
			t.Fatalf("AcquireWaitCtx() = %v, %v", ok, err)
		}
		if elapsed < 300*time.Millisecond {
			t.Fatalf("acquired after %v, before the holder's 300ms expired", elapsed)
		}
		if elapsed > 450*time.Millisecond {
			t.Fatalf("acquired after %v: the waiter slept well past the holder's 300ms", elapsed)
		}
		mustRelease(t, waiter, true)
	})
}

func TestWaitLimitAndContext(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		holder := b.newLock(key)
		holder.SetExpire(10)
		mustAcquire(t, holder, true)
		waiter := b.newLock(key)
		waiter.SetExpire(10)

		start := time.Now()
		ok, err := waiter.AcquireWaitCtx(context.Background(), 150*time.Millisecond)
		if ok || err != nil {
			t.Fatalf("AcquireWait past its limit = %v, %v; want false, nil", ok, err)
		}
		if d := time.Since(start); d < 150*time.Millisecond || d > 3*time.Second {
			t.Fatalf("AcquireWaitCtx(150ms) returned after %v", d)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		ok, err = waiter.AcquireWaitCtx(ctx, time.Minute)
		if ok || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("AcquireWaitCtx with an expiring context = %v, %v; want errors.Is DeadlineExceeded", ok, err)
		}
		mustRelease(t, holder, true)
		waitForSubscribers(t, admin, key, 0)
	})
}

// TestWaitersShareOneSubscription: 20 waiters on one key in one process
// hold one subscription, and hand the lock on to each other with no two
// holding it at once.
func TestWaitersShareOneSubscription(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		holder := b.newLock(key)
		holder.SetExpire(10)
		mustAcquire(t, holder, true)

		const waiters = 20
		var (
			inside, handoffs atomic.Int32
			wg               sync.WaitGroup
		)
		for i := 0; i < waiters; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lock := b.newLock(key)
				lock.SetExpire(10)
				ok, err := lock.AcquireWaitCtx(context.Background(), 30*time.Second)
				if !ok || err != nil {
					t.Errorf("AcquireWaitCtx() = %v, %v", ok, err)
					return
				}
				if n := inside.Add(1); n != 1 {
					t.Errorf("%d holders at once", n)
				}
				time.Sleep(time.Millisecond)
				handoffs.Add(1)
				inside.Add(-1)
				if ok, err := lock.Release(); !ok || err != nil {
					t.Errorf("Release() = %v, %v", ok, err)
				}
			}()
		}
		// Once all twenty wait, the server still has one subscriber.
		deadline := time.Now().Add(5 * time.Second)
		for redislock.HubWaiters(b.store(), key) != waiters {
			if time.Now().After(deadline) {
				t.Fatalf("%d waiters registered, want %d", redislock.HubWaiters(b.store(), key), waiters)
			}
			time.Sleep(2 * time.Millisecond)
		}
		waitForSubscribers(t, admin, key, 1) // one, not twenty
		mustRelease(t, holder, true)
		wg.Wait()
		if handoffs.Load() != waiters {
			t.Fatalf("%d hand-offs, want %d", handoffs.Load(), waiters)
		}
		waitForSubscribers(t, admin, key, 0)
	})
}
