package locktest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/locktest"
)

// memoryOptions claim exactly the abilities NewMemoryBackend's doc
// promises, with exact expiry. 300 ms leaves the refresher check's sleeps
// (a quarter of the expiry) room for a test goroutine descheduled under
// -race on a loaded machine: at 100 ms a 75 ms stall let a refreshed hold
// lapse.
var memoryOptions = locktest.Options{
	Expiry: 300 * time.Millisecond,
	Slack:  2 * time.Second,
	Waiter: true, TTLer: true, Watcher: true, Refresher: true, Fencer: true,
}

// TestConformanceMemory: the memory backend passes the whole suite with
// every ability it claims, one Backend serving all checks (they use keys
// of their own).
func TestConformanceMemory(t *testing.T) {
	backend := locktest.NewMemoryBackend()
	locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, memoryOptions)
}

// testTimeout bounds each call of the tests below.
const testTimeout = 10 * time.Second

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// TestMemoryMaxHold: a watch ends with ErrMaxHold once MaxHold passes, and
// the hold then expires a full expiry later, so another Locker gets it.
func TestMemoryMaxHold(t *testing.T) {
	const expiry, maxHold = 100 * time.Millisecond, 150 * time.Millisecond
	ctx := testContext(t)
	backend := locktest.NewMemoryBackend()
	a := backend.NewLocker(t.Name(), zerolock.LockerOptions{Expiry: expiry})
	b := backend.NewLocker(t.Name(), zerolock.LockerOptions{Expiry: expiry})
	if ok, err := a.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("A: AcquireCtx = %v, %v; want true, nil", ok, err)
	}
	start := time.Now()
	watched := a.(zerolock.Watcher).Watch(ctx, zerolock.MaxHold(maxHold))
	select {
	case <-watched.Done():
	case <-ctx.Done():
		t.Fatalf("A's Watch with MaxHold %v still runs after %v", maxHold, testTimeout)
	}
	if d := time.Since(start); d < maxHold {
		t.Errorf("A's Watch with MaxHold %v ended after %v", maxHold, d)
	}
	if cause := context.Cause(watched); !errors.Is(cause, zerolock.ErrMaxHold) {
		t.Errorf("context.Cause of A's Watch after MaxHold = %v; want ErrMaxHold", cause)
	}
	if ok, err := b.(zerolock.Waiter).AcquireWaitCtx(ctx, testTimeout); !ok || err != nil {
		t.Fatalf("B: AcquireWaitCtx after A's watch ended = %v, %v; want true, nil (A's hold expires)", ok, err)
	}
	if d := time.Since(start); d < maxHold+expiry-2*time.Millisecond {
		t.Errorf("B got the lock %v after A's Watch began; want no sooner than MaxHold and an expiry, %v", d, maxHold+expiry)
	}
	if ok, err := b.ReleaseCtx(ctx); !ok || err != nil {
		t.Fatalf("B: ReleaseCtx = %v, %v; want true, nil", ok, err)
	}
}

// TestMemoryInvalidExpiry: a Locker whose expiry is not positive cannot
// acquire, and holds nothing.
func TestMemoryInvalidExpiry(t *testing.T) {
	ctx := testContext(t)
	backend := locktest.NewMemoryBackend()
	for _, expiry := range []time.Duration{0, -time.Second} {
		l := backend.NewLocker(t.Name(), zerolock.LockerOptions{Expiry: expiry})
		if ok, err := l.AcquireCtx(ctx); ok || err == nil {
			t.Errorf("AcquireCtx with expiry %v = %v, %v; want false and an error", expiry, ok, err)
		}
		if ok, err := l.(zerolock.Waiter).AcquireWaitCtx(ctx, time.Second); ok || err == nil {
			t.Errorf("AcquireWaitCtx with expiry %v = %v, %v; want false and an error", expiry, ok, err)
		}
		if ok, err := l.ReleaseCtx(ctx); ok || err != nil {
			t.Errorf("ReleaseCtx with expiry %v = %v, %v; want false, nil", expiry, ok, err)
		}
	}
}

// TestMemoryBackendsShareNothing: Lockers of one key from two Backends do
// not exclude each other.
func TestMemoryBackendsShareNothing(t *testing.T) {
	ctx := testContext(t)
	o := zerolock.LockerOptions{Expiry: time.Minute}
	for i, backend := range []zerolock.Backend{locktest.NewMemoryBackend(), locktest.NewMemoryBackend()} {
		l := backend.NewLocker(t.Name(), o)
		if ok, err := l.AcquireCtx(ctx); !ok || err != nil {
			t.Fatalf("backend %d: AcquireCtx = %v, %v; want true, nil", i, ok, err)
		}
		if got := l.(zerolock.Fencer).Fence(); got != 1 {
			t.Errorf("backend %d: Fence() of its first hold = %d; want 1", i, got)
		}
	}
}

// TestMemoryEndedContext: the calls the suite does not cover with an
// ended context return an error that errors.Is the context's.
func TestMemoryEndedContext(t *testing.T) {
	ended, cancel := context.WithCancel(testContext(t))
	cancel()
	l := locktest.NewMemoryBackend().NewLocker(t.Name(), zerolock.LockerOptions{Expiry: time.Minute})
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"ReleaseCtx", func() error { _, err := l.ReleaseCtx(ended); return err }},
		{"TTL", func() error { _, err := l.(zerolock.TTLer).TTL(ended); return err }},
		{"RefreshCtx", func() error { _, err := l.(zerolock.Refresher).RefreshCtx(ended); return err }},
	} {
		if err := c.call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s(cancelled context) = %v; want an error that errors.Is context.Canceled", c.name, err)
		}
	}
}
