package redislock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestWithoutWakeups: on a real redis-server, on both stores, a release
// WithoutWakeups deletes the key without publishing (the server's publish
// count does not move), even while a waiter waits (a quiet hold is never
// marked: its token ends in "_"), where a default release of a marked hold
// publishes once; a waiter in another instance still gets
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
			// (acquire.lua): released, a default lock announces it once.
			loud := b.newLock(key)
			loud.SetExpire(30)
			mustAcquire(t, loud, true)
			if err := admin.SetRange(context.Background(), key, 26, "!").Err(); err != nil {
				t.Fatal(err)
			}
			before = redistest.Calls(t, admin, "spublish", "publish")
			mustRelease(t, loud, true)
			if got := redistest.Calls(t, admin, "spublish", "publish") - before; got != 1 {
				t.Errorf("a default release of a marked hold published %d times, want 1", got)
			}

			mustAcquire(t, quiet, true)
			waiter := b.newLock(key, redislock.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
			waiter.SetExpire(30)
			got := inBackground(func() (bool, error) { return waiter.AcquireWaitCtx(context.Background(), 10*time.Second) })
			deadline := time.Now().Add(5 * time.Second)
			for redislock.HubWaiters(b.store(), key) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("the waiter never started waiting")
				}
				time.Sleep(time.Millisecond) // poll until the waiter is waiting
			}
			// The waiter's refused try cannot mark a quiet hold (its token
			// ends in "_", so that the server's compare-and-delete, which
			// compares exactly, releases it): it sets the waiter flag.
			waitFlagged(t, admin, key)
			if held := admin.Get(context.Background(), key).Val(); !strings.HasSuffix(held, "_") {
				t.Errorf("a quiet hold under a waiter is %q; want it unmarked, ending in _", held)
			}
			before = redistest.Calls(t, admin, "spublish", "publish")
			mustRelease(t, quiet, true)
			if got := redistest.Calls(t, admin, "spublish", "publish") - before; got != 0 {
				t.Errorf("a release WithoutWakeups under a waiter published %d times", got)
			}
			if err := <-got; err != nil {
				t.Fatalf("waiter after a release WithoutWakeups: %v", err)
			}
			mustRelease(t, waiter, true)
		})
	}
}
