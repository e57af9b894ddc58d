package etcdlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
	"github.com/zerolock/zerolock/internal/testing/obstest"
)

// metrics reads the lock metrics of the etcd backend back and runs the
// scenarios zklock's tests share (internal/testing/obstest).
var metrics = obstest.Backend{Label: "etcd", Prefix: "etcdlock"}

// TestObserveContention: each try is counted once, whatever the
// interleaving of the contenders (obstest's Contention).
func TestObserveContention(t *testing.T) {
	srv := etcdtest.Shared(t)
	name, key := metrics.LockName(t), testKey(t)
	metrics.Contention(t, testCtx(t), name, func() zerolock.Locker {
		return etcdlock.New(srv.Client(t), key, etcdlock.WithName(name))
	})
}

// TestObserveWait: a waiting acquire is one acquisition and one
// wait_seconds sample however long it waits (obstest's Wait).
func TestObserveWait(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	name, key := metrics.LockName(t), testKey(t)
	holder := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	waiter := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	metrics.Wait(t, testCtx(t), name, holder, waiter, func() { waitQueued(t, admin, holder, 2) })
}

// TestObserveLostDeleted: a watched lock whose key is deleted is lost
// with cause deleted, and its release, which finds it gone, is counted.
func TestObserveLostDeleted(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	name := metrics.LockName(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	before := metrics.LostBy(t, name)
	goneBefore := metrics.Gather(t, "zerolock_lock_release_gone_total", name)
	mustAcquire(t, lock)
	watched := lock.Watch(testCtx(t))
	if _, err := admin.Delete(testCtx(t), string(holderKey(t, admin, lock).Kvs[0].Key)); err != nil {
		t.Fatal(err)
	}
	if cause := waitCause(t, watched); !errors.Is(cause, zerolock.ErrLockLost) {
		t.Fatalf("cause %v, want ErrLockLost", cause)
	}
	if ok, err := lock.ReleaseCtx(testCtx(t)); ok || err != nil { // waits for the watchdog
		t.Fatalf("release of the lost lock: %v, %v; want false, nil", ok, err)
	}
	obstest.WantDelta(t, "lost", before, metrics.LostBy(t, name), map[string]float64{"deleted": 1, "taken_over": 0, "renew_failed": 0, "max_hold": 0})
	if n := metrics.Gather(t, "zerolock_lock_release_gone_total", name).Count - goneBefore.Count; n != 1 {
		t.Errorf("release_gone went up by %v; want 1", n)
	}
}

// TestObserveRenewalsAndMaxHold: each refresh of a watched lease is a
// renewal, and MaxHold ends the watch with cause max_hold.
func TestObserveRenewalsAndMaxHold(t *testing.T) {
	srv := etcdtest.Shared(t)
	name := metrics.LockName(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	before := metrics.LostBy(t, name)
	renewalsBefore := metrics.Gather(t, "zerolock_lock_renewals_total", name)
	failuresBefore := metrics.Gather(t, "zerolock_lock_renew_failures_total", name)
	mustAcquire(t, lock)
	watched := lock.Watch(testCtx(t), zerolock.RenewEvery(50*time.Millisecond), zerolock.MaxHold(500*time.Millisecond))
	if cause := waitCause(t, watched); !errors.Is(cause, zerolock.ErrMaxHold) {
		t.Fatalf("cause %v, want ErrMaxHold", cause)
	}
	mustRelease(t, lock)
	obstest.WantDelta(t, "lost", before, metrics.LostBy(t, name), map[string]float64{"deleted": 0, "taken_over": 0, "renew_failed": 0, "max_hold": 1})
	// A refresh at once, then one every 50 ms for 500 ms; a busy machine
	// may miss some, never all.
	if n := metrics.Gather(t, "zerolock_lock_renewals_total", name).Count - renewalsBefore.Count; n < 2 || n > 11 {
		t.Errorf("renewals went up by %v; want 2 to 11", n)
	}
	if n := metrics.Gather(t, "zerolock_lock_renew_failures_total", name).Count - failuresBefore.Count; n != 0 {
		t.Errorf("renew_failures went up by %v; want 0", n)
	}
}

// TestObserveRenewFailed pauses the server under a running watchdog: the
// refresh that cannot get through is a renew failure, and the hold is lost
// with cause renew_failed.
func TestObserveRenewFailed(t *testing.T) {
	srv := etcdtest.Shared(t)
	name := metrics.LockName(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithName(name), etcdlock.WithExpiry(time.Second))
	before := metrics.LostBy(t, name)
	renewalsBefore := metrics.Gather(t, "zerolock_lock_renewals_total", name)
	failuresBefore := metrics.Gather(t, "zerolock_lock_renew_failures_total", name)
	mustAcquire(t, lock)
	// Paused only once the watchdog refreshes: its first refresh waits for
	// the key's watch, which a paused server holds up.
	watched := lock.Watch(testCtx(t), zerolock.RenewEvery(100*time.Millisecond))
	deadline := time.Now().Add(10 * time.Second)
	for metrics.Gather(t, "zerolock_lock_renewals_total", name).Count == renewalsBefore.Count {
		if time.Now().After(deadline) {
			t.Fatal("no renewal within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	srv.Pause()
	resumed := false
	resume := func() {
		if !resumed {
			srv.Resume()
			resumed = true
		}
	}
	t.Cleanup(resume)
	cause := waitCause(t, watched)
	resume()
	if !errors.Is(cause, zerolock.ErrRenewFailed) {
		t.Fatalf("cause %v, want ErrRenewFailed", cause)
	}
	if _, err := lock.ReleaseCtx(testCtx(t)); err != nil { // waits for the watchdog
		t.Fatalf("release after the server came back: %v", err)
	}
	waitServing(t, srv.Client(t))
	obstest.WantDelta(t, "lost", before, metrics.LostBy(t, name), map[string]float64{"deleted": 0, "taken_over": 0, "renew_failed": 1, "max_hold": 0})
	if n := metrics.Gather(t, "zerolock_lock_renew_failures_total", name).Count - failuresBefore.Count; n != 1 {
		t.Errorf("renew_failures went up by %v; want 1, the refresh stuck on the paused server", n)
	}
}

// TestObserveReleaseGoneAfterExpiry: the release of a lock whose lease
// etcd expired finds it gone, and is counted so, with no hold time.
func TestObserveReleaseGoneAfterExpiry(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	name := metrics.LockName(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithName(name), etcdlock.WithExpiry(time.Second))
	goneBefore := metrics.Gather(t, "zerolock_lock_release_gone_total", name)
	holdsBefore := metrics.Gather(t, "zerolock_lock_hold_seconds", name)
	mustAcquire(t, lock)
	lease := holderLease(t, admin, lock)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := admin.TimeToLive(testCtx(t), lease)
		if err != nil {
			t.Fatal(err)
		}
		if resp.TTL == -1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ok, err := lock.ReleaseCtx(testCtx(t)); ok || err != nil {
		t.Fatalf("release of the expired lock: %v, %v; want false, nil", ok, err)
	}
	if n := metrics.Gather(t, "zerolock_lock_release_gone_total", name).Count - goneBefore.Count; n != 1 {
		t.Errorf("release_gone went up by %v; want 1", n)
	}
	if n := metrics.Gather(t, "zerolock_lock_hold_seconds", name).Count - holdsBefore.Count; n != 0 {
		t.Errorf("hold_seconds has %v new samples; want none for a lock that expired", n)
	}
}

// TestObserveTrace: under a recording request span, an acquire is a
// "zerolock.acquire" child span with the lock's name, backend, outcome and
// fencing token, and the loss of the watched hold is an event on the
// request span.
func TestObserveTrace(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	name := metrics.LockName(t)
	ctx, request, rec := obstest.Recording(t, testCtx(t))

	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	if ok, err := lock.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	watched := lock.Watch(ctx)
	if _, err := admin.Delete(testCtx(t), string(holderKey(t, admin, lock).Kvs[0].Key)); err != nil {
		t.Fatal(err)
	}
	waitCause(t, watched)
	if _, err := lock.ReleaseCtx(testCtx(t)); err != nil { // waits for the watchdog
		t.Fatal(err)
	}
	request.End()
	metrics.WantLostLockTrace(t, rec, name, lock.Fence())
}

// TestObserveBackendName: the Backend's Lockers report under the
// LockerOptions' Name (obstest's LockerName).
func TestObserveBackendName(t *testing.T) {
	srv := etcdtest.Shared(t)
	metrics.LockerName(t, testCtx(t), metrics.LockName(t), etcdlock.NewBackend(srv.Client(t)), testKey(t), time.Second)
}

// TestObserveWaitDeadline: a wait its context's deadline ends is a
// timeout, a cancelled one an error (obstest's WaitDeadline).
func TestObserveWaitDeadline(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	name, key := metrics.LockName(t), testKey(t)
	holder := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name+"-holder"), etcdlock.WithExpiry(30*time.Second))
	waiter := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	metrics.WaitDeadline(t, testCtx(t), name, holder, waiter, func() { waitQueued(t, admin, holder, 2) })
}

// TestObserveBackendDefaultName: a name given WithName to NewBackend
// names the Lockers of rules without one; a rule's name wins (obstest's
// DefaultName).
func TestObserveBackendDefaultName(t *testing.T) {
	srv := etcdtest.Shared(t)
	metrics.DefaultName(t, testCtx(t), metrics.LockName(t), func(defaultName string) zerolock.Backend {
		return etcdlock.NewBackend(srv.Client(t), etcdlock.WithName(defaultName))
	}, testKey(t)+":", time.Second)
}
