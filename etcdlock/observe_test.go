package etcdlock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
	"github.com/zerolock/zerolock/internal/testing/obstest"
)

// lockName, gather, counts, lostBy and wantDelta read the lock metrics of
// the etcd backend back (internal/testing/obstest).
func lockName(t *testing.T) string { t.Helper(); return obstest.LockName(t, "etcdlock") }

func gather(t *testing.T, family, name string, extra ...string) obstest.Sample {
	t.Helper()
	return obstest.Gather(t, "etcd", family, name, extra...)
}

func counts(t *testing.T, name string) map[string]float64 {
	t.Helper()
	return obstest.Counts(t, "etcd", name)
}

func lostBy(t *testing.T, name string) map[string]float64 {
	t.Helper()
	return obstest.LostBy(t, "etcd", name)
}

var wantDelta = obstest.WantDelta

// TestObserveContention: each try is counted once, as acquired or busy,
// whatever the interleaving of the contenders, and each hold ended by a
// release is a hold_seconds sample, together no longer than the acquire
// and release calls of those holds took.
func TestObserveContention(t *testing.T) {
	srv := etcdtest.Shared(t)
	name, key := lockName(t), testKey(t)
	before := counts(t, name)
	holdsBefore := gather(t, "zerolock_lock_hold_seconds", name)

	// One certain refusal: a try while another holds the lock.
	start := time.Now()
	holder := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name))
	mustAcquire(t, holder)
	if ok, err := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name)).AcquireCtx(testCtx(t)); ok || err != nil {
		t.Fatalf("try on a held lock: %v, %v; want false, nil", ok, err)
	}
	mustRelease(t, holder)

	const contenders, tries = 3, 6
	var (
		mu             sync.Mutex
		acquired, busy = 1.0, 1.0 // the holder's and the refusal above
		outer          = time.Since(start).Seconds()
		wg             sync.WaitGroup
	)
	for range contenders {
		lock := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range tries {
				began := time.Now()
				ok, err := lock.AcquireCtx(testCtx(t))
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if ok {
					acquired++
				} else {
					busy++
				}
				mu.Unlock()
				if ok {
					if released, err := lock.ReleaseCtx(testCtx(t)); !released || err != nil {
						t.Errorf("release: %v, %v", released, err)
					}
					mu.Lock()
					outer += time.Since(began).Seconds()
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%v acquired, %v busy", acquired, busy)

	after := counts(t, name)
	wantDelta(t, "acquisitions", before, after, map[string]float64{"acquired": acquired, "busy": busy, "timeout": 0, "error": 0})
	if total := acquired + busy; total != 2+contenders*tries {
		t.Errorf("%v acquired + %v busy = %v tries; want %d", acquired, busy, total, 2+contenders*tries)
	}
	holds := gather(t, "zerolock_lock_hold_seconds", name)
	if n := holds.Count - holdsBefore.Count; n != acquired {
		t.Errorf("hold_seconds has %v new samples; want %v, one per release", n, acquired)
	}
	if sum := holds.Sum - holdsBefore.Sum; sum <= 0 || sum > outer {
		t.Errorf("hold_seconds summed %v s; want more than 0 and at most the %v s its acquires and releases took", sum, outer)
	}
}

// TestObserveWait: a waiting acquire is one acquisition and one
// wait_seconds sample however long it waits, timeout when its limit
// passes and acquired when a release hands it the lock; its first try is
// not counted apart.
func TestObserveWait(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	name, key := lockName(t), testKey(t)
	holder := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	waiter := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	before := counts(t, name)
	waitsBefore := gather(t, "zerolock_lock_wait_seconds", name)
	mustAcquire(t, holder)

	const limit = 300 * time.Millisecond
	if ok, err := waiter.AcquireWaitCtx(testCtx(t), limit); ok || err != nil {
		t.Fatalf("wait on a held lock: %v, %v; want false, nil", ok, err)
	}
	mid := counts(t, name)
	wantDelta(t, "acquisitions", before, mid, map[string]float64{"acquired": 1, "busy": 0, "timeout": 1, "error": 0})
	waits := gather(t, "zerolock_lock_wait_seconds", name)
	if n := waits.Count - waitsBefore.Count; n != 1 {
		t.Errorf("wait_seconds has %v new samples after the timeout; want 1", n)
	}
	if waited := waits.Sum - waitsBefore.Sum; waited < limit.Seconds() {
		t.Errorf("the timed-out wait was observed as %v s; want at least its %v limit", waited, limit)
	}

	got := make(chan error, 1)
	go func() {
		ok, err := waiter.AcquireWaitCtx(testCtx(t), 0)
		if err == nil && !ok {
			err = errors.New("the wait without limit answered false")
		}
		got <- err
	}()
	waitQueued(t, admin, holder, 2)
	mustRelease(t, holder)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	mustRelease(t, waiter)
	wantDelta(t, "acquisitions", mid, counts(t, name), map[string]float64{"acquired": 1, "busy": 0, "timeout": 0, "error": 0})
	if n := gather(t, "zerolock_lock_wait_seconds", name).Count - waits.Count; n != 1 {
		t.Errorf("wait_seconds has %v new samples after the won wait; want 1", n)
	}
}

// TestObserveLostDeleted: a watched lock whose key is deleted is lost
// with cause deleted, and its release, which finds it gone, is counted.
func TestObserveLostDeleted(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	name := lockName(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	before := lostBy(t, name)
	goneBefore := gather(t, "zerolock_lock_release_gone_total", name)
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
	wantDelta(t, "lost", before, lostBy(t, name), map[string]float64{"deleted": 1, "taken_over": 0, "renew_failed": 0, "max_hold": 0})
	if n := gather(t, "zerolock_lock_release_gone_total", name).Count - goneBefore.Count; n != 1 {
		t.Errorf("release_gone went up by %v; want 1", n)
	}
}

// TestObserveRenewalsAndMaxHold: each refresh of a watched lease is a
// renewal, and MaxHold ends the watch with cause max_hold.
func TestObserveRenewalsAndMaxHold(t *testing.T) {
	srv := etcdtest.Shared(t)
	name := lockName(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	before := lostBy(t, name)
	renewalsBefore := gather(t, "zerolock_lock_renewals_total", name)
	failuresBefore := gather(t, "zerolock_lock_renew_failures_total", name)
	mustAcquire(t, lock)
	watched := lock.Watch(testCtx(t), zerolock.RenewEvery(50*time.Millisecond), zerolock.MaxHold(500*time.Millisecond))
	if cause := waitCause(t, watched); !errors.Is(cause, zerolock.ErrMaxHold) {
		t.Fatalf("cause %v, want ErrMaxHold", cause)
	}
	mustRelease(t, lock)
	wantDelta(t, "lost", before, lostBy(t, name), map[string]float64{"deleted": 0, "taken_over": 0, "renew_failed": 0, "max_hold": 1})
	// A refresh at once, then one every 50 ms for 500 ms; a busy machine
	// may miss some, never all.
	if n := gather(t, "zerolock_lock_renewals_total", name).Count - renewalsBefore.Count; n < 2 || n > 11 {
		t.Errorf("renewals went up by %v; want 2 to 11", n)
	}
	if n := gather(t, "zerolock_lock_renew_failures_total", name).Count - failuresBefore.Count; n != 0 {
		t.Errorf("renew_failures went up by %v; want 0", n)
	}
}

// TestObserveRenewFailed pauses the server under a running watchdog: the
// refresh that cannot get through is a renew failure, and the hold is lost
// with cause renew_failed.
func TestObserveRenewFailed(t *testing.T) {
	srv := etcdtest.Shared(t)
	name := lockName(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithName(name), etcdlock.WithExpiry(time.Second))
	before := lostBy(t, name)
	renewalsBefore := gather(t, "zerolock_lock_renewals_total", name)
	failuresBefore := gather(t, "zerolock_lock_renew_failures_total", name)
	mustAcquire(t, lock)
	// Paused only once the watchdog refreshes: its first refresh waits for
	// the key's watch, which a paused server holds up.
	watched := lock.Watch(testCtx(t), zerolock.RenewEvery(100*time.Millisecond))
	deadline := time.Now().Add(10 * time.Second)
	for gather(t, "zerolock_lock_renewals_total", name).Count == renewalsBefore.Count {
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
	wantDelta(t, "lost", before, lostBy(t, name), map[string]float64{"deleted": 0, "taken_over": 0, "renew_failed": 1, "max_hold": 0})
	if n := gather(t, "zerolock_lock_renew_failures_total", name).Count - failuresBefore.Count; n != 1 {
		t.Errorf("renew_failures went up by %v; want 1, the refresh stuck on the paused server", n)
	}
}

// TestObserveReleaseGoneAfterExpiry: the release of a lock whose lease
// etcd expired finds it gone, and is counted so, with no hold time.
func TestObserveReleaseGoneAfterExpiry(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	name := lockName(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithName(name), etcdlock.WithExpiry(time.Second))
	goneBefore := gather(t, "zerolock_lock_release_gone_total", name)
	holdsBefore := gather(t, "zerolock_lock_hold_seconds", name)
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
	if n := gather(t, "zerolock_lock_release_gone_total", name).Count - goneBefore.Count; n != 1 {
		t.Errorf("release_gone went up by %v; want 1", n)
	}
	if n := gather(t, "zerolock_lock_hold_seconds", name).Count - holdsBefore.Count; n != 0 {
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
	name := lockName(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, request := tp.Tracer("test").Start(testCtx(t), "request")

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

	var acquires, requests []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "zerolock.acquire":
			acquires = append(acquires, s)
		case "request":
			requests = append(requests, s)
		}
	}
	if len(acquires) != 1 || len(requests) != 1 {
		t.Fatalf("%d acquire and %d request spans; want one of each", len(acquires), len(requests))
	}
	acq, req := acquires[0], requests[0]
	if acq.Parent().SpanID() != req.SpanContext().SpanID() || acq.SpanContext().TraceID() != req.SpanContext().TraceID() {
		t.Errorf("acquire span's parent %v in trace %v; want the request span %v in %v",
			acq.Parent().SpanID(), acq.SpanContext().TraceID(), req.SpanContext().SpanID(), req.SpanContext().TraceID())
	}
	attrs := map[string]any{}
	for _, kv := range acq.Attributes() {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	for k, want := range map[string]any{
		"zerolock.lock.name": name, "zerolock.lock.backend": "etcd", "zerolock.lock.kind": "mutex",
		"zerolock.lock.outcome": "acquired", "zerolock.lock.fence": lock.Fence(),
	} {
		if attrs[k] != want {
			t.Errorf("acquire span attribute %s = %v; want %v", k, attrs[k], want)
		}
	}
	var causes []any
	for _, e := range req.Events() {
		if e.Name == "zerolock.lock_lost" {
			for _, kv := range e.Attributes {
				if kv.Key == "zerolock.lock.cause" {
					causes = append(causes, kv.Value.AsInterface())
				}
			}
		}
	}
	if len(causes) != 1 || causes[0] != "deleted" {
		t.Errorf("lock_lost events on the request span with causes %v; want one, deleted", causes)
	}
}

// TestObserveBackendName: the Backend's Lockers report under the
// LockerOptions' Name, as the middleware and the interceptor set it.
func TestObserveBackendName(t *testing.T) {
	srv := etcdtest.Shared(t)
	name := lockName(t)
	before := counts(t, name)
	locker := etcdlock.NewBackend(srv.Client(t)).NewLocker(testKey(t), zerolock.LockerOptions{Expiry: time.Second, Name: name})
	if ok, err := locker.AcquireCtx(testCtx(t)); !ok || err != nil {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	if ok, err := locker.ReleaseCtx(testCtx(t)); !ok || err != nil {
		t.Fatalf("release: %v, %v", ok, err)
	}
	wantDelta(t, "acquisitions", before, counts(t, name), map[string]float64{"acquired": 1})
}

// TestObserveWaitDeadline: a waiting acquire that its context's deadline
// ends counts as a timeout, as one whose wait limit passed, and its span
// is not marked failed; one whose context is cancelled counts as an error.
func TestObserveWaitDeadline(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	name, key := lockName(t), testKey(t)
	holder := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name+"-holder"), etcdlock.WithExpiry(30*time.Second))
	waiter := etcdlock.New(srv.Client(t), key, etcdlock.WithName(name), etcdlock.WithExpiry(30*time.Second))
	mustAcquire(t, holder)
	t.Cleanup(func() { _, _ = holder.ReleaseCtx(context.Background()) })
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	parent, request := tp.Tracer("test").Start(testCtx(t), "request")

	before := counts(t, name)
	ctx, cancel := context.WithTimeout(parent, 300*time.Millisecond)
	defer cancel()
	if ok, err := waiter.AcquireWaitCtx(ctx, 0); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on a held lock until a 300ms deadline: %v, %v; want false, DeadlineExceeded", ok, err)
	}
	mid := counts(t, name)
	wantDelta(t, "acquisitions", before, mid, map[string]float64{"acquired": 0, "busy": 0, "timeout": 1, "error": 0})

	ctx, cancel = context.WithCancel(parent)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.AcquireWaitCtx(ctx, 0)
		done <- err
	}()
	waitQueued(t, admin, holder, 2)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v; want Canceled", err)
	}
	wantDelta(t, "acquisitions", mid, counts(t, name), map[string]float64{"acquired": 0, "busy": 0, "timeout": 0, "error": 1})
	request.End()

	var acquires []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "zerolock.acquire" {
			acquires = append(acquires, s)
		}
	}
	if len(acquires) != 2 {
		t.Fatalf("%d acquire spans; want 2", len(acquires))
	}
	for i, want := range []codes.Code{codes.Unset, codes.Error} {
		if got := acquires[i].Status().Code; got != want {
			t.Errorf("acquire span %d: status %v; want %v", i, got, want)
		}
	}
}

// TestObserveBackendDefaultName: a name given WithName to NewBackend
// names the Lockers of rules without one; a rule's name wins.
func TestObserveBackendDefaultName(t *testing.T) {
	srv := etcdtest.Shared(t)
	name := lockName(t)
	backend := etcdlock.NewBackend(srv.Client(t), etcdlock.WithName(name+"-default"))
	beforeDefault, beforeRule := counts(t, name+"-default"), counts(t, name+"-rule")
	for i, lo := range []zerolock.LockerOptions{
		{Expiry: time.Second},
		{Expiry: time.Second, Name: name + "-rule"},
	} {
		locker := backend.NewLocker(testKey(t)+":"+string(rune('a'+i)), lo)
		if ok, err := locker.AcquireCtx(testCtx(t)); !ok || err != nil {
			t.Fatalf("acquire %d: %v, %v", i, ok, err)
		}
		if ok, err := locker.ReleaseCtx(testCtx(t)); !ok || err != nil {
			t.Fatalf("release %d: %v, %v", i, ok, err)
		}
	}
	wantDelta(t, "acquisitions of the backend's name", beforeDefault, counts(t, name+"-default"), map[string]float64{"acquired": 1})
	wantDelta(t, "acquisitions of the rule's name", beforeRule, counts(t, name+"-rule"), map[string]float64{"acquired": 1})
}
