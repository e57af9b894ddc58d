package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestWithoutWakeups: on a real redis-server, on both stores, a release
// WithoutWakeups deletes the key without publishing (the server's publish
// count does not move), even while a waiter has marked the hold, where a
// default release publishes once; a waiter in another instance still gets
// a lock released without wake-up, at its next back-off retry.
func TestWithoutWakeups(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	for _, b := range backends(t, srv) {
		t.Run(b.name, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			quiet := b.newLock(key, redislock.WithoutWakeups())
			quiet.SetExpire(30)
			mustAcquire(t, quiet, true)
			before := redistest.Calls(t, admin, "spublish", "publish")
			mustRelease(t, quiet, true)
			if got := redistest.Calls(t, admin, "spublish", "publish") - before; got != 0 {
				t.Errorf("a release WithoutWakeups published %d times", got)
			}
			if n, err := admin.Exists(context.Background(), key).Result(); err != nil || n != 0 {
				t.Errorf("key after the quiet release: exists=%d, %v", n, err)
			}

			// A hold marked as waited on, as a refused waiting try leaves it
			// (acquire.lua): released, WithoutWakeups announces nothing, a
			// default lock once.
			mark := func() {
				t.Helper()
				if err := admin.SetRange(context.Background(), key, 26, "!").Err(); err != nil {
					t.Fatal(err)
				}
			}
			mustAcquire(t, quiet, true)
			mark()
			before = redistest.Calls(t, admin, "spublish", "publish")
			mustRelease(t, quiet, true)
			if got := redistest.Calls(t, admin, "spublish", "publish") - before; got != 0 {
				t.Errorf("a release WithoutWakeups of a marked hold published %d times", got)
			}
			loud := b.newLock(key)
			loud.SetExpire(30)
			mustAcquire(t, loud, true)
			mark()
			before = redistest.Calls(t, admin, "spublish", "publish")
			mustRelease(t, loud, true)
			if got := redistest.Calls(t, admin, "spublish", "publish") - before; got != 1 {
				t.Errorf("a default release of a marked hold published %d times, want 1", got)
			}

			mustAcquire(t, quiet, true)
			waiter := b.newLock(key, redislock.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
			waiter.SetExpire(30)
			got := make(chan error, 1)
			go func() {
				ok, err := waiter.AcquireWaitCtx(context.Background(), 10*time.Second)
				if err == nil && !ok {
					err = context.DeadlineExceeded
				}
				got <- err
			}()
			deadline := time.Now().Add(5 * time.Second)
			for redislock.HubWaiters(b.store(), key) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the waiter never started waiting")
				}
				time.Sleep(time.Millisecond) // poll until the waiter is waiting
			}
			mustRelease(t, quiet, true)
			if err := <-got; err != nil {
				t.Fatalf("waiter after a release WithoutWakeups: %v", err)
			}
			mustRelease(t, waiter, true)
		})
	}
}
