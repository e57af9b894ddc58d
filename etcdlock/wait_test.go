package etcdlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
)

// TestWaitersQueueInOrder starts waiters one after another, each confirmed
// queued in etcd before the next starts, then releases the holder: they
// get the lock in the order they queued.
func TestWaitersQueueInOrder(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	clients := []*clientv3.Client{srv.Client(t), srv.Client(t), srv.Client(t)}
	key := testKey(t)
	ctx := testCtx(t)
	holder := etcdlock.New(admin, key, etcdlock.WithExpiry(10*time.Second))
	mustAcquire(t, holder)

	const n = 6
	order := make(chan int, n)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			lock := etcdlock.New(clients[i%len(clients)], key, etcdlock.WithExpiry(10*time.Second))
			ok, err := lock.AcquireWaitCtx(ctx, 0)
			if err != nil || !ok {
				errs <- errors.Join(err, errors.New("waiter did not get the lock"))
				return
			}
			order <- i // before releasing: the next waiter cannot get in first
			_, err = lock.ReleaseCtx(ctx)
			errs <- err
		}()
		waitQueued(t, admin, holder, int64(i+2)) // the holder and i+1 waiters
	}
	mustRelease(t, holder)
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(order)
	want := 0
	for got := range order {
		if got != want {
			t.Fatalf("waiter %d got the lock in turn %d", got, want)
		}
		want++
	}
}

// TestWaiterGivingUpLeavesTheQueue: a waiter whose wait limit passes gets
// false, nil and removes its key, and one whose context ends gets the
// context's error and removes its key too, so neither blocks a later
// acquirer once the holder releases.
func TestWaiterGivingUpLeavesTheQueue(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	key := testKey(t)
	holder := etcdlock.New(admin, key, etcdlock.WithExpiry(10*time.Second))
	mustAcquire(t, holder)

	waiter := etcdlock.New(srv.Client(t), key, etcdlock.WithExpiry(10*time.Second))
	if ok, err := waiter.AcquireWaitCtx(testCtx(t), 200*time.Millisecond); ok || err != nil {
		t.Fatalf("wait past the limit: %v, %v; want false, nil", ok, err)
	}
	if n := queued(t, admin, holder); n != 1 {
		t.Fatalf("%d keys under the lock after a waiter gave up, want the holder's only", n)
	}

	ctx, cancel := context.WithCancel(testCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := waiter.AcquireWaitCtx(ctx, 0)
		done <- err
	}()
	waitQueued(t, admin, holder, 2)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}
	if n := queued(t, admin, holder); n != 1 {
		t.Fatalf("%d keys under the lock after a waiter was cancelled, want the holder's only", n)
	}

	mustRelease(t, holder)
	mustAcquire(t, etcdlock.New(admin, key)) // a try: nothing left in the queue before it
}

// TestAcquireWaitTakesAFreeLock: with nobody holding it, the waiting
// acquire takes the lock and the lock lives its TTL from then.
func TestAcquireWaitTakesAFreeLock(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithExpiry(3*time.Second))
	if ok, err := lock.AcquireWait(10 * time.Second); !ok || err != nil {
		t.Fatalf("AcquireWait of a free lock: %v, %v; want true, nil", ok, err)
	}
	resp, err := admin.TimeToLive(testCtx(t), holderLease(t, admin, lock))
	if err != nil || resp.GrantedTTL != 3 || resp.TTL <= 0 {
		t.Fatalf("lease after AcquireWait: %+v, %v; want a live 3s lease", resp, err)
	}
	if ok, err := lock.Release(); !ok || err != nil {
		t.Fatalf("Release: %v, %v; want true, nil", ok, err)
	}
}

// TestWaiterGivesUpWhileEtcdHangs: a waiter whose wait limit passes while
// etcd hangs returns, instead of hanging on the queue key's clean-up until
// etcd answers again, and its key is gone once etcd is back.
func TestWaiterGivesUpWhileEtcdHangs(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	key := testKey(t)
	holder := etcdlock.New(admin, key, etcdlock.WithExpiry(30*time.Second))
	mustAcquire(t, holder)
	waiter := etcdlock.New(srv.Client(t), key, etcdlock.WithExpiry(time.Second))
	done := make(chan error, 1)
	go func() {
		ok, err := waiter.AcquireWaitCtx(testCtx(t), 1500*time.Millisecond)
		if ok {
			err = errors.Join(err, errors.New("the waiter got a held lock"))
		}
		done <- err
	}()
	waitQueued(t, admin, holder, 2)
	srv.Pause()
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			srv.Resume()
		}
	})
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("waiter giving up while etcd hangs: %v, want false, nil", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter did not return while etcd hangs")
	}
	srv.Resume()
	resumed = true
	waitQueued(t, admin, holder, 1) // revoked, or expired: its lease is no longer kept alive
	mustRelease(t, holder)
}
