package redislock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// AcquireOrReadWaitCtx, on every store a user can hand the lock (single
// node and Cluster, go-zero's store and go-redis): a waiter on a held key
// is woken by the holder's record, which it returns, and by the holder's
// release, after which it holds the key; with nobody acting it gives up at
// its wait limit. The back-off is a minute and the holder's expiry longer,
// so only an announcement answers within the test: a waiter that polled
// would time out. The holder is made as a backend makes a lock with
// zerolock.LockerOptions.Waited: WithoutWakeups off.
func TestAcquireOrReadWait(t *testing.T) {
	srv := redistest.Start(t)
	all := append(backends(t, srv), clusterBackends(t, redistest.SharedCluster(t))...)
	for i, b := range all {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			newLock := func(key string) redislock.RecordingLock {
				return redislock.Recording(b.newLock(key, redislock.WithExpiry(time.Minute),
					redislock.WithBackoff(time.Minute, time.Minute)))
			}
			wait := func(l redislock.RecordingLock, limit time.Duration) chan waitResult {
				done := make(chan waitResult, 1)
				go func() {
					ok, rec, err := l.AcquireOrReadWaitCtx(ctx, limit)
					done <- waitResult{ok, rec, err}
				}()
				return done
			}

			key := fmt.Sprintf("zerolock-test:recordwait:%d:{slot%d}", i, i)
			holder, waiter := newLock(key), newLock(key)
			if ok, _, err := holder.AcquireOrReadCtx(ctx); !ok || err != nil {
				t.Fatalf("the holder's acquire = %v, %v", ok, err)
			}
			// Three waiters (a triple click): a record answers them all.
			var dones []chan waitResult
			for n := 1; n <= 3; n++ {
				dones = append(dones, wait(newLock(key), 20*time.Second))
				waitingOn(t, b.store(), key, n)
			}
			if ok, err := holder.RecordCtx(ctx, []byte("result"), time.Minute); !ok || err != nil {
				t.Fatalf("RecordCtx = %v, %v", ok, err)
			}
			for _, done := range dones {
				if r := <-done; r.ok || r.err != nil || string(r.rec) != "result" {
					t.Fatalf("a waiter woken by a record = %v, %q, %v; want the record", r.ok, r.rec, r.err)
				}
			}

			key = fmt.Sprintf("zerolock-test:recordwait:%d:released:{slot%d}", i, i)
			holder, waiter = newLock(key), newLock(key)
			if ok, _, err := holder.AcquireOrReadCtx(ctx); !ok || err != nil {
				t.Fatalf("the holder's acquire = %v, %v", ok, err)
			}
			done := wait(waiter, 20*time.Second)
			waitingOn(t, b.store(), key, 1)
			if ok, err := holder.ReleaseCtx(ctx); !ok || err != nil {
				t.Fatalf("ReleaseCtx = %v, %v", ok, err)
			}
			if r := <-done; !r.ok || r.err != nil || r.rec != nil {
				t.Fatalf("a waiter woken by a release = %v, %q, %v; want the lock", r.ok, r.rec, r.err)
			}
			if ok, err := waiter.ReleaseCtx(ctx); !ok || err != nil {
				t.Fatalf("the waiter's release = %v, %v", ok, err)
			}

			key = fmt.Sprintf("zerolock-test:recordwait:%d:limit:{slot%d}", i, i)
			holder, waiter = newLock(key), newLock(key)
			if ok, _, err := holder.AcquireOrReadCtx(ctx); !ok || err != nil {
				t.Fatalf("the holder's acquire = %v, %v", ok, err)
			}
			if r := <-wait(waiter, 200*time.Millisecond); r.ok || r.err != nil || r.rec != nil {
				t.Fatalf("a waiter nobody wakes = %v, %q, %v; want false at its limit", r.ok, r.rec, r.err)
			}
			_, _ = holder.ReleaseCtx(ctx)
		})
	}
}

type waitResult struct {
	ok  bool
	rec []byte
	err error
}

// waitingOn polls until n waiters on key have subscribed (each flags the
// key in the try that follows its subscription).
func waitingOn(t *testing.T, store redislock.Store, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for redislock.HubWaiters(store, key) < n {
		if time.Now().After(deadline) {
			t.Fatal("no waiter on the key")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// A backend's lock made with LockerOptions.Waited announces its record even
// when the backend is WithoutWakeups, and is a zerolock.RecordWaiter.
func TestBackendWaitedLocksAnnounce(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	b := redislock.NewBackend(client, redislock.WithoutWakeups(), redislock.WithBackoff(time.Minute, time.Minute))
	lo := zerolock.LockerOptions{Expiry: time.Minute, Waited: true}
	holder := b.NewLocker("zerolock-test:waited", lo).(zerolock.RecordWaiter)
	waiter := b.NewLocker("zerolock-test:waited", lo).(zerolock.RecordWaiter)
	ctx := context.Background()
	if ok, _, err := holder.AcquireOrReadCtx(ctx); !ok || err != nil {
		t.Fatalf("the holder's acquire = %v, %v", ok, err)
	}
	done := make(chan waitResult, 1)
	go func() {
		ok, rec, err := waiter.AcquireOrReadWaitCtx(ctx, 20*time.Second)
		done <- waitResult{ok, rec, err}
	}()
	waitingOn(t, client, "zerolock-test:waited", 1)
	if ok, err := holder.RecordCtx(ctx, []byte("r"), time.Minute); !ok || err != nil {
		t.Fatalf("RecordCtx = %v, %v", ok, err)
	}
	if r := <-done; string(r.rec) != "r" || r.err != nil {
		t.Fatalf("the waiter = %v, %q, %v; want the record", r.ok, r.rec, r.err)
	}
}
