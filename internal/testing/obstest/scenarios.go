package obstest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/zerolock/zerolock"
)

// Contention: each try is counted once, as acquired or busy, whatever the
// interleaving of the contenders, and each hold ended by a release is a
// hold_seconds sample, together no longer than the acquire and release
// calls of those holds took. newLock makes a lock of b on one key, named
// name; every call to the lock runs on ctx.
func (b Backend) Contention(t *testing.T, ctx context.Context, name string, newLock func() zerolock.Locker) {
	t.Helper()
	before := b.Counts(t, name)
	holdsBefore := b.Gather(t, "zerolock_lock_hold_seconds", name)

	// One certain refusal: a try while another holds the lock.
	start := time.Now()
	holder := newLock()
	mustAcquire(t, ctx, holder)
	if ok, err := newLock().AcquireCtx(ctx); ok || err != nil {
		t.Fatalf("try on a held lock: %v, %v; want false, nil", ok, err)
	}
	mustRelease(t, ctx, holder)

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
				ok, err := lock.AcquireCtx(ctx)
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
					if released, err := lock.ReleaseCtx(ctx); !released || err != nil {
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

	after := b.Counts(t, name)
	WantDelta(t, "acquisitions", before, after, map[string]float64{"acquired": acquired, "busy": busy, "timeout": 0, "error": 0})
	if total := acquired + busy; total != 2+contenders*tries {
		t.Errorf("%v acquired + %v busy = %v tries; want %d", acquired, busy, total, 2+contenders*tries)
	}
	holds := b.Gather(t, "zerolock_lock_hold_seconds", name)
	if n := holds.Count - holdsBefore.Count; n != acquired {
		t.Errorf("hold_seconds has %v new samples; want %v, one per release", n, acquired)
	}
	if sum := holds.Sum - holdsBefore.Sum; sum <= 0 || sum > outer {
		t.Errorf("hold_seconds summed %v s; want more than 0 and at most the %v s its acquires and releases took", sum, outer)
	}
}

// Wait: a waiting acquire is one acquisition and one wait_seconds sample
// however long it waits, timeout when its limit passes and acquired when
// a release hands it the lock; its first try is not counted apart. holder
// and waiter are locks of b on one key, both named name; queued returns
// once the waiter queues behind the holder. Every call runs on ctx.
func (b Backend) Wait(t *testing.T, ctx context.Context, name string, holder, waiter zerolock.Waiter, queued func()) {
	t.Helper()
	before := b.Counts(t, name)
	waitsBefore := b.Gather(t, "zerolock_lock_wait_seconds", name)
	mustAcquire(t, ctx, holder)

	const limit = 300 * time.Millisecond
	if ok, err := waiter.AcquireWaitCtx(ctx, limit); ok || err != nil {
		t.Fatalf("wait on a held lock: %v, %v; want false, nil", ok, err)
	}
	mid := b.Counts(t, name)
	WantDelta(t, "acquisitions", before, mid, map[string]float64{"acquired": 1, "busy": 0, "timeout": 1, "error": 0})
	waits := b.Gather(t, "zerolock_lock_wait_seconds", name)
	if n := waits.Count - waitsBefore.Count; n != 1 {
		t.Errorf("wait_seconds has %v new samples after the timeout; want 1", n)
	}
	if waited := waits.Sum - waitsBefore.Sum; waited < limit.Seconds() {
		t.Errorf("the timed-out wait was observed as %v s; want at least its %v limit", waited, limit)
	}

	got := make(chan error, 1)
	go func() {
		ok, err := waiter.AcquireWaitCtx(ctx, 0)
		if err == nil && !ok {
			err = errors.New("the wait without limit answered false")
		}
		got <- err
	}()
	queued()
	mustRelease(t, ctx, holder)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	mustRelease(t, ctx, waiter)
	WantDelta(t, "acquisitions", mid, b.Counts(t, name), map[string]float64{"acquired": 1, "busy": 0, "timeout": 0, "error": 0})
	if n := b.Gather(t, "zerolock_lock_wait_seconds", name).Count - waits.Count; n != 1 {
		t.Errorf("wait_seconds has %v new samples after the won wait; want 1", n)
	}
}

// WaitDeadline: a waiting acquire that its context's deadline ends counts
// as a timeout, as one whose wait limit passed, and its span is not marked
// failed; one whose context is cancelled counts as an error. holder and
// waiter are locks of b on one key, the waiter named name and the holder
// another name; queued returns once the waiter queues behind the holder.
// The calls run on contexts derived from ctx.
func (b Backend) WaitDeadline(t *testing.T, ctx context.Context, name string, holder, waiter zerolock.Waiter, queued func()) {
	t.Helper()
	mustAcquire(t, ctx, holder)
	t.Cleanup(func() { _, _ = holder.ReleaseCtx(context.Background()) })
	parent, request, rec := Recording(t, ctx)

	before := b.Counts(t, name)
	deadlined, cancel := context.WithTimeout(parent, 300*time.Millisecond)
	defer cancel()
	if ok, err := waiter.AcquireWaitCtx(deadlined, 0); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("wait on a held lock until a 300ms deadline: %v, %v; want false, DeadlineExceeded", ok, err)
	}
	mid := b.Counts(t, name)
	WantDelta(t, "acquisitions", before, mid, map[string]float64{"acquired": 0, "busy": 0, "timeout": 1, "error": 0})

	cancelled, cancel := context.WithCancel(parent)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.AcquireWaitCtx(cancelled, 0)
		done <- err
	}()
	queued()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v; want Canceled", err)
	}
	WantDelta(t, "acquisitions", mid, b.Counts(t, name), map[string]float64{"acquired": 0, "busy": 0, "timeout": 0, "error": 1})
	request.End()

	acquires := spansNamed(rec, "zerolock.acquire")
	if len(acquires) != 2 {
		t.Fatalf("%d acquire spans; want 2", len(acquires))
	}
	for i, want := range []codes.Code{codes.Unset, codes.Error} {
		if got := acquires[i].Status().Code; got != want {
			t.Errorf("acquire span %d: status %v; want %v", i, got, want)
		}
	}
}

// LockerName: the Backend's Lockers report under the LockerOptions' Name,
// as the middleware and the interceptor set it.
func (b Backend) LockerName(t *testing.T, ctx context.Context, name string, backend zerolock.Backend, key string, expiry time.Duration) {
	t.Helper()
	before := b.Counts(t, name)
	locker := backend.NewLocker(key, zerolock.LockerOptions{Expiry: expiry, Name: name})
	if ok, err := locker.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	if ok, err := locker.ReleaseCtx(ctx); !ok || err != nil {
		t.Fatalf("release: %v, %v", ok, err)
	}
	WantDelta(t, "acquisitions", before, b.Counts(t, name), map[string]float64{"acquired": 1})
}

// DefaultName: a name given to the backend (newBackend makes it with
// WithName(defaultName)) names the Lockers of rules without one; a rule's
// name wins. Their keys are keyPrefix and a letter.
func (b Backend) DefaultName(t *testing.T, ctx context.Context, name string, newBackend func(defaultName string) zerolock.Backend, keyPrefix string, expiry time.Duration) {
	t.Helper()
	backend := newBackend(name + "-default")
	beforeDefault, beforeRule := b.Counts(t, name+"-default"), b.Counts(t, name+"-rule")
	for i, lo := range []zerolock.LockerOptions{
		{Expiry: expiry},
		{Expiry: expiry, Name: name + "-rule"},
	} {
		locker := backend.NewLocker(keyPrefix+string(rune('a'+i)), lo)
		if ok, err := locker.AcquireCtx(ctx); !ok || err != nil {
			t.Fatalf("acquire %d: %v, %v", i, ok, err)
		}
		if ok, err := locker.ReleaseCtx(ctx); !ok || err != nil {
			t.Fatalf("release %d: %v, %v", i, ok, err)
		}
	}
	WantDelta(t, "acquisitions of the backend's name", beforeDefault, b.Counts(t, name+"-default"), map[string]float64{"acquired": 1})
	WantDelta(t, "acquisitions of the rule's name", beforeRule, b.Counts(t, name+"-rule"), map[string]float64{"acquired": 1})
}

// mustAcquire takes lock, failing the test unless it gets it.
func mustAcquire(t *testing.T, ctx context.Context, lock zerolock.Locker) {
	t.Helper()
	if ok, err := lock.AcquireCtx(ctx); err != nil || !ok {
		t.Fatalf("acquire: %v, %v; want true, nil", ok, err)
	}
}

// mustRelease releases lock, failing the test unless it held it.
func mustRelease(t *testing.T, ctx context.Context, lock zerolock.Locker) {
	t.Helper()
	if ok, err := lock.ReleaseCtx(ctx); err != nil || !ok {
		t.Fatalf("release: %v, %v; want true, nil", ok, err)
	}
}
