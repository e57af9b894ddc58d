package zklock_test

import (
	"context"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/obstest"
	"github.com/zerolock/zerolock/internal/testing/zktest"
	"github.com/zerolock/zerolock/zklock"
)

// metrics reads the lock metrics of the zookeeper backend back and runs
// the scenarios etcdlock's tests share (internal/testing/obstest).
var metrics = obstest.Backend{Label: "zookeeper", Prefix: "zklock"}

// TestObserveContention: each try is counted once, whatever the
// interleaving of the contenders (obstest's Contention).
func TestObserveContention(t *testing.T) {
	name := metrics.LockName(t)
	metrics.Contention(t, context.Background(), name, func() zerolock.Locker {
		return zklock.New(connect(t), "contended", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	})
}

// TestObserveWait: a waiting acquire is one acquisition and one
// wait_seconds sample however long it waits; its first look at the queue
// is not counted apart (obstest's Wait).
func TestObserveWait(t *testing.T) {
	name := metrics.LockName(t)
	conn := connect(t)
	holder := zklock.New(conn, "waited", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	waiter := zklock.New(connect(t), "waited", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	metrics.Wait(t, ctx, name, holder, waiter, func() {
		eventually(t, 10*time.Second, "the waiter did not queue", func() bool { return queueLen(t, conn, holder) == 2 })
	})
}

// TestObserveLostDeleted: a watched lock whose node another client
// deletes is lost with cause deleted, and its release, which finds it
// gone, is counted.
func TestObserveLostDeleted(t *testing.T) {
	name := metrics.LockName(t)
	conn, admin := connect(t), connect(t)
	lock := zklock.New(conn, "deleted", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	before := metrics.LostBy(t, name)
	goneBefore := metrics.Gather(t, "zerolock_lock_release_gone_total", name)
	mustAcquire(t, lock)
	watched := lock.Watch(context.Background())
	if err := admin.Delete(ownNode(t, admin, lock), -1); err != nil {
		t.Fatal(err)
	}
	lostWithin(t, watched, 20*time.Second)
	if ok, err := lock.Release(); ok || err != nil { // the watch is over by then
		t.Fatalf("release of the lost lock: %v, %v; want false, nil", ok, err)
	}
	obstest.WantDelta(t, "lost", before, metrics.LostBy(t, name), map[string]float64{"deleted": 1, "taken_over": 0, "renew_failed": 0, "max_hold": 0})
	if n := metrics.Gather(t, "zerolock_lock_release_gone_total", name).Count - goneBefore.Count; n != 1 {
		t.Errorf("release_gone went up by %v; want 1", n)
	}
}

// TestObserveSessionLost cuts the holder off from ZooKeeper: the
// connection without its session is a renew failure, and the hold is
// lost with cause renew_failed.
func TestObserveSessionLost(t *testing.T) {
	name := metrics.LockName(t)
	proxy := faultproxy.Start(t, zktest.Shared(t).Addr())
	holderConn := zktest.Connect(t, proxy.Addr(), shortSession)
	holder := zklock.New(holderConn, "cut", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	before := metrics.LostBy(t, name)
	failuresBefore := metrics.Gather(t, "zerolock_lock_renew_failures_total", name)
	mustAcquire(t, holder)
	watched := holder.Watch(context.Background())

	proxy.Cut()
	lostWithin(t, watched, 20*time.Second)
	proxy.Heal()
	zktest.WaitSession(t, holderConn)
	// The watch is over; the session may or may not have outlived the cut.
	if _, err := holder.Release(); err != nil {
		t.Fatalf("release after the cut: %v", err)
	}
	obstest.WantDelta(t, "lost", before, metrics.LostBy(t, name), map[string]float64{"deleted": 0, "taken_over": 0, "renew_failed": 1, "max_hold": 0})
	if n := metrics.Gather(t, "zerolock_lock_renew_failures_total", name).Count - failuresBefore.Count; n != 1 {
		t.Errorf("renew_failures went up by %v; want 1, the connection seen without its session", n)
	}
}

// TestObserveMaxHold: MaxHold ends the watch with cause max_hold, and the
// release after it is a hold.
func TestObserveMaxHold(t *testing.T) {
	name := metrics.LockName(t)
	lock := zklock.New(connect(t), "bounded", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	before := metrics.LostBy(t, name)
	holdsBefore := metrics.Gather(t, "zerolock_lock_hold_seconds", name)
	mustAcquire(t, lock)
	watched := lock.Watch(context.Background(), zerolock.MaxHold(100*time.Millisecond))
	select {
	case <-watched.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("MaxHold did not end the watch")
	}
	if ok, err := lock.Release(); !ok || err != nil {
		t.Fatalf("release after MaxHold: %v, %v; want true, nil", ok, err)
	}
	obstest.WantDelta(t, "lost", before, metrics.LostBy(t, name), map[string]float64{"deleted": 0, "taken_over": 0, "renew_failed": 0, "max_hold": 1})
	if n := metrics.Gather(t, "zerolock_lock_hold_seconds", name).Count - holdsBefore.Count; n != 1 {
		t.Errorf("hold_seconds has %v new samples; want 1", n)
	}
}

// TestObserveReleaseGoneAfterExpiry: the release of a lock its expiry
// timer already released finds it gone, and is counted so, with no hold
// time.
func TestObserveReleaseGoneAfterExpiry(t *testing.T) {
	name := metrics.LockName(t)
	conn := connect(t)
	lock := zklock.New(conn, "expired", testRoot(t), zklock.WithName(name), zklock.WithExpiry(100*time.Millisecond))
	goneBefore := metrics.Gather(t, "zerolock_lock_release_gone_total", name)
	holdsBefore := metrics.Gather(t, "zerolock_lock_hold_seconds", name)
	mustAcquire(t, lock)
	eventually(t, 20*time.Second, "the lock never expired", func() bool { return queueLen(t, conn, lock) == 0 })
	if ok, err := lock.Release(); ok || err != nil {
		t.Fatalf("release of the expired lock: %v, %v; want false, nil", ok, err)
	}
	if ok, err := lock.Release(); ok || err != nil {
		t.Fatalf("second release: %v, %v; want false, nil", ok, err)
	}
	if n := metrics.Gather(t, "zerolock_lock_release_gone_total", name).Count - goneBefore.Count; n != 1 {
		t.Errorf("release_gone went up by %v; want 1 (the second release had nothing to find)", n)
	}
	if n := metrics.Gather(t, "zerolock_lock_hold_seconds", name).Count - holdsBefore.Count; n != 0 {
		t.Errorf("hold_seconds has %v new samples; want none for a lock that expired", n)
	}
}

// TestObserveTrace: under a recording request span, a waiting acquire is
// a "zerolock.acquire" child span with the lock's name, backend, outcome,
// wait time and fencing token, and the loss of the watched hold is an
// event on the request span.
func TestObserveTrace(t *testing.T) {
	name := metrics.LockName(t)
	conn, admin := connect(t), connect(t)
	ctx, request, rec := obstest.Recording(t, context.Background())

	lock := zklock.New(conn, "traced", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	if ok, err := lock.AcquireWaitCtx(ctx, 10*time.Second); !ok || err != nil {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	watched := lock.Watch(ctx)
	if err := admin.Delete(ownNode(t, admin, lock), -1); err != nil {
		t.Fatal(err)
	}
	lostWithin(t, watched, 20*time.Second)
	if _, err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	request.End()
	attrs := metrics.WantLostLockTrace(t, rec, name, lock.Fence())
	if _, ok := attrs["zerolock.lock.wait_ms"]; !ok {
		t.Error("the waiting acquire's span has no wait_ms")
	}
}

// TestObserveBackendName: the Backend's Lockers report under the
// LockerOptions' Name (obstest's LockerName).
func TestObserveBackendName(t *testing.T) {
	metrics.LockerName(t, context.Background(), metrics.LockName(t), zklock.NewBackend(connect(t), testRoot(t)), "named", time.Minute)
}

// TestObserveWaitDeadline: a wait its context's deadline ends is a
// timeout, a cancelled one an error (obstest's WaitDeadline).
func TestObserveWaitDeadline(t *testing.T) {
	name := metrics.LockName(t)
	conn := connect(t)
	holder := zklock.New(conn, "waited", testRoot(t), zklock.WithName(name+"-holder"), zklock.WithExpiry(time.Minute))
	waiter := zklock.New(connect(t), "waited", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	metrics.WaitDeadline(t, context.Background(), name, holder, waiter, func() {
		eventually(t, 10*time.Second, "the waiter did not queue", func() bool { return queueLen(t, conn, holder) == 2 })
	})
}

// TestObserveBackendDefaultName: a name given WithName to NewBackend
// names the Lockers of rules without one; a rule's name wins (obstest's
// DefaultName).
func TestObserveBackendDefaultName(t *testing.T) {
	metrics.DefaultName(t, context.Background(), metrics.LockName(t), func(defaultName string) zerolock.Backend {
		return zklock.NewBackend(connect(t), testRoot(t), zklock.WithName(defaultName))
	}, "named-", time.Minute)
}
