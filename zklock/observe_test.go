package zklock_test

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
	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/obstest"
	"github.com/zerolock/zerolock/internal/testing/zktest"
	"github.com/zerolock/zerolock/zklock"
)

// lockName, gather, counts, lostBy and wantDelta read the lock metrics of
// the zookeeper backend back (internal/testing/obstest).
func lockName(t *testing.T) string { t.Helper(); return obstest.LockName(t, "zklock") }

func gather(t *testing.T, family, name string, extra ...string) obstest.Sample {
	t.Helper()
	return obstest.Gather(t, "zookeeper", family, name, extra...)
}

func counts(t *testing.T, name string) map[string]float64 {
	t.Helper()
	return obstest.Counts(t, "zookeeper", name)
}

func lostBy(t *testing.T, name string) map[string]float64 {
	t.Helper()
	return obstest.LostBy(t, "zookeeper", name)
}

var wantDelta = obstest.WantDelta

// TestObserveContention: each try is counted once, as acquired or busy,
// whatever the interleaving of the contenders, and each hold ended by a
// release is a hold_seconds sample, together no longer than the acquire
// and release calls of those holds took.
func TestObserveContention(t *testing.T) {
	name := lockName(t)
	before := counts(t, name)
	holdsBefore := gather(t, "zerolock_lock_hold_seconds", name)
	newLock := func() *zklock.Lock {
		return zklock.New(connect(t), "contended", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	}

	// One certain refusal: a try while another holds the lock.
	start := time.Now()
	holder := newLock()
	mustAcquire(t, holder)
	if ok, err := newLock().AcquireCtx(context.Background()); ok || err != nil {
		t.Fatalf("try on a held lock: %v, %v; want false, nil", ok, err)
	}
	if ok, err := holder.Release(); !ok || err != nil {
		t.Fatalf("release: %v, %v", ok, err)
	}

	const contenders, tries = 3, 6
	var (
		mu             sync.Mutex
		acquired, busy = 1.0, 1.0 // the holder's and the refusal above
		outer          = time.Since(start).Seconds()
		wg             sync.WaitGroup
	)
	for range contenders {
		lock := newLock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range tries {
				began := time.Now()
				ok, err := lock.AcquireCtx(context.Background())
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
					if released, err := lock.Release(); !released || err != nil {
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
// passes and acquired when a release hands it the lock; its first look at
// the queue is not counted apart.
func TestObserveWait(t *testing.T) {
	name := lockName(t)
	conn := connect(t)
	holder := zklock.New(conn, "waited", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	waiter := zklock.New(connect(t), "waited", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	before := counts(t, name)
	waitsBefore := gather(t, "zerolock_lock_wait_seconds", name)
	mustAcquire(t, holder)

	const limit = 300 * time.Millisecond
	if ok, err := waiter.AcquireWait(limit); ok || err != nil {
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
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ok, err := waiter.AcquireWaitCtx(ctx, 0)
		if err == nil && !ok {
			err = errors.New("the wait without limit answered false")
		}
		got <- err
	}()
	eventually(t, 10*time.Second, "the waiter did not queue", func() bool { return queueLen(t, conn, holder) == 2 })
	if ok, err := holder.Release(); !ok || err != nil {
		t.Fatalf("release: %v, %v", ok, err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if ok, err := waiter.Release(); !ok || err != nil {
		t.Fatalf("release: %v, %v", ok, err)
	}
	wantDelta(t, "acquisitions", mid, counts(t, name), map[string]float64{"acquired": 1, "busy": 0, "timeout": 0, "error": 0})
	if n := gather(t, "zerolock_lock_wait_seconds", name).Count - waits.Count; n != 1 {
		t.Errorf("wait_seconds has %v new samples after the won wait; want 1", n)
	}
}

// TestObserveLostDeleted: a watched lock whose node another client
// deletes is lost with cause deleted, and its release, which finds it
// gone, is counted.
func TestObserveLostDeleted(t *testing.T) {
	name := lockName(t)
	conn, admin := connect(t), connect(t)
	lock := zklock.New(conn, "deleted", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	before := lostBy(t, name)
	goneBefore := gather(t, "zerolock_lock_release_gone_total", name)
	mustAcquire(t, lock)
	watched := lock.Watch(context.Background())
	if err := admin.Delete(ownNode(t, admin, lock), -1); err != nil {
		t.Fatal(err)
	}
	lostWithin(t, watched, 20*time.Second)
	if ok, err := lock.Release(); ok || err != nil { // the watch is over by then
		t.Fatalf("release of the lost lock: %v, %v; want false, nil", ok, err)
	}
	wantDelta(t, "lost", before, lostBy(t, name), map[string]float64{"deleted": 1, "taken_over": 0, "renew_failed": 0, "max_hold": 0})
	if n := gather(t, "zerolock_lock_release_gone_total", name).Count - goneBefore.Count; n != 1 {
		t.Errorf("release_gone went up by %v; want 1", n)
	}
}

// TestObserveSessionLost cuts the holder off from ZooKeeper: the
// connection without its session is a renew failure, and the hold is
// lost with cause renew_failed.
func TestObserveSessionLost(t *testing.T) {
	name := lockName(t)
	proxy := faultproxy.Start(t, zktest.Shared(t).Addr())
	holderConn := zktest.Connect(t, proxy.Addr(), shortSession)
	holder := zklock.New(holderConn, "cut", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	before := lostBy(t, name)
	failuresBefore := gather(t, "zerolock_lock_renew_failures_total", name)
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
	wantDelta(t, "lost", before, lostBy(t, name), map[string]float64{"deleted": 0, "taken_over": 0, "renew_failed": 1, "max_hold": 0})
	if n := gather(t, "zerolock_lock_renew_failures_total", name).Count - failuresBefore.Count; n != 1 {
		t.Errorf("renew_failures went up by %v; want 1, the connection seen without its session", n)
	}
}

// TestObserveMaxHold: MaxHold ends the watch with cause max_hold, and the
// release after it is a hold.
func TestObserveMaxHold(t *testing.T) {
	name := lockName(t)
	lock := zklock.New(connect(t), "bounded", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	before := lostBy(t, name)
	holdsBefore := gather(t, "zerolock_lock_hold_seconds", name)
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
	wantDelta(t, "lost", before, lostBy(t, name), map[string]float64{"deleted": 0, "taken_over": 0, "renew_failed": 0, "max_hold": 1})
	if n := gather(t, "zerolock_lock_hold_seconds", name).Count - holdsBefore.Count; n != 1 {
		t.Errorf("hold_seconds has %v new samples; want 1", n)
	}
}

// TestObserveReleaseGoneAfterExpiry: the release of a lock its expiry
// timer already released finds it gone, and is counted so, with no hold
// time.
func TestObserveReleaseGoneAfterExpiry(t *testing.T) {
	name := lockName(t)
	conn := connect(t)
	lock := zklock.New(conn, "expired", testRoot(t), zklock.WithName(name), zklock.WithExpiry(100*time.Millisecond))
	goneBefore := gather(t, "zerolock_lock_release_gone_total", name)
	holdsBefore := gather(t, "zerolock_lock_hold_seconds", name)
	mustAcquire(t, lock)
	eventually(t, 20*time.Second, "the lock never expired", func() bool { return queueLen(t, conn, lock) == 0 })
	if ok, err := lock.Release(); ok || err != nil {
		t.Fatalf("release of the expired lock: %v, %v; want false, nil", ok, err)
	}
	if ok, err := lock.Release(); ok || err != nil {
		t.Fatalf("second release: %v, %v; want false, nil", ok, err)
	}
	if n := gather(t, "zerolock_lock_release_gone_total", name).Count - goneBefore.Count; n != 1 {
		t.Errorf("release_gone went up by %v; want 1 (the second release had nothing to find)", n)
	}
	if n := gather(t, "zerolock_lock_hold_seconds", name).Count - holdsBefore.Count; n != 0 {
		t.Errorf("hold_seconds has %v new samples; want none for a lock that expired", n)
	}
}

// TestObserveTrace: under a recording request span, a waiting acquire is
// a "zerolock.acquire" child span with the lock's name, backend, outcome
// and fencing token, and the loss of the watched hold is an event on the
// request span.
func TestObserveTrace(t *testing.T) {
	name := lockName(t)
	conn, admin := connect(t), connect(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, request := tp.Tracer("test").Start(context.Background(), "request")

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
		"zerolock.lock.name": name, "zerolock.lock.backend": "zookeeper", "zerolock.lock.kind": "mutex",
		"zerolock.lock.outcome": "acquired", "zerolock.lock.fence": lock.Fence(),
	} {
		if attrs[k] != want {
			t.Errorf("acquire span attribute %s = %v; want %v", k, attrs[k], want)
		}
	}
	if _, ok := attrs["zerolock.lock.wait_ms"]; !ok {
		t.Error("the waiting acquire's span has no wait_ms")
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
	name := lockName(t)
	before := counts(t, name)
	locker := zklock.NewBackend(connect(t), testRoot(t)).NewLocker("named", zerolock.LockerOptions{Expiry: time.Minute, Name: name})
	if ok, err := locker.AcquireCtx(context.Background()); !ok || err != nil {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	if ok, err := locker.ReleaseCtx(context.Background()); !ok || err != nil {
		t.Fatalf("release: %v, %v", ok, err)
	}
	wantDelta(t, "acquisitions", before, counts(t, name), map[string]float64{"acquired": 1})
}

// TestObserveWaitDeadline: a waiting acquire that its context's deadline
// ends counts as a timeout, as one whose wait limit passed, and its span
// is not marked failed; one whose context is cancelled counts as an error.
func TestObserveWaitDeadline(t *testing.T) {
	name := lockName(t)
	conn := connect(t)
	holder := zklock.New(conn, "waited", testRoot(t), zklock.WithName(name+"-holder"), zklock.WithExpiry(time.Minute))
	waiter := zklock.New(connect(t), "waited", testRoot(t), zklock.WithName(name), zklock.WithExpiry(time.Minute))
	mustAcquire(t, holder)
	t.Cleanup(func() { _, _ = holder.Release() })
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	parent, request := tp.Tracer("test").Start(context.Background(), "request")

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
	eventually(t, 10*time.Second, "the waiter did not queue", func() bool { return queueLen(t, conn, holder) == 2 })
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
	name := lockName(t)
	backend := zklock.NewBackend(connect(t), testRoot(t), zklock.WithName(name+"-default"))
	beforeDefault, beforeRule := counts(t, name+"-default"), counts(t, name+"-rule")
	for i, lo := range []zerolock.LockerOptions{
		{Expiry: time.Minute},
		{Expiry: time.Minute, Name: name + "-rule"},
	} {
		locker := backend.NewLocker("named-"+string(rune('a'+i)), lo)
		if ok, err := locker.AcquireCtx(context.Background()); !ok || err != nil {
			t.Fatalf("acquire %d: %v, %v", i, ok, err)
		}
		if ok, err := locker.ReleaseCtx(context.Background()); !ok || err != nil {
			t.Fatalf("release %d: %v, %v", i, ok, err)
		}
	}
	wantDelta(t, "acquisitions of the backend's name", beforeDefault, counts(t, name+"-default"), map[string]float64{"acquired": 1})
	wantDelta(t, "acquisitions of the rule's name", beforeRule, counts(t, name+"-rule"), map[string]float64{"acquired": 1})
}
