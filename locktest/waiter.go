package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

// waiter runs the checks of a Waiter, when the deployment claims one.
func (s *suite) waiter(t *testing.T) {
	if !s.opts.Waiter {
		t.Skip("Options.Waiter does not claim the ability")
	}
	t.Run("WokenByRelease", s.wokenByRelease)
	t.Run("WaitLimit", s.waitLimit)
	t.Run("CancelledContext", s.waitCancelledContext)
	t.Run("CancelledWhileWaiting", s.cancelledWhileWaiting)
}

// waiterOf returns l as a Waiter, failing the check when it is not one.
func waiterOf(t *testing.T, l zerolock.Locker) zerolock.Waiter {
	t.Helper()
	w, ok := l.(zerolock.Waiter)
	if !ok {
		t.Fatalf("Options.Waiter claims the ability, but the Locker (%T) is not a zerolock.Waiter", l)
	}
	return w
}

// outcome is what a call of AcquireWaitCtx returned, and when.
type outcome struct {
	ok  bool
	err error
	at  time.Time
}

// waitInBackground calls AcquireWaitCtx on another goroutine.
func waitInBackground(ctx context.Context, w zerolock.Waiter, wait time.Duration) <-chan outcome {
	done := make(chan outcome, 1)
	go func() {
		ok, err := w.AcquireWaitCtx(ctx, wait)
		done <- outcome{ok, err, time.Now()}
	}()
	return done
}

// stillWaits fails the check when the waiter returns within stillWaiting,
// while the lock is held and its wait has far to go.
func stillWaits(t *testing.T, done <-chan outcome, who string) {
	t.Helper()
	select {
	case r := <-done:
		t.Fatalf("%s: AcquireWaitCtx = %v, %v while another Locker held the lock and before its wait ended; want it to keep waiting", who, r.ok, r.err)
	case <-time.After(stillWaiting):
	}
}

// wokenByRelease: a waiter gets a lock its holder releases, before its
// wait ends (the holder's expiry is far beyond it), and not before the
// release.
func (s *suite) wokenByRelease(t *testing.T) {
	f := s.fixture(t)
	a := f.locker(holdExpiry)
	b := waiterOf(t, f.locker(holdExpiry))
	f.mustAcquire(a, "A on a free key")
	wait := 2 * s.opts.Slack
	done := waitInBackground(f.ctx, b, wait)
	stillWaits(t, done, "B waiting while A holds")
	released := time.Now()
	f.mustRelease(a, true, "A, the holder, with B waiting")
	select {
	case r := <-done:
		if !r.ok || r.err != nil {
			t.Fatalf("B: AcquireWaitCtx(%v) = %v, %v after A released; want true, nil", wait, r.ok, r.err)
		}
		if d := r.at.Sub(released); d > s.opts.Slack {
			t.Errorf("B got the lock %v after A released it; want within %v", d, s.opts.Slack)
		}
	case <-time.After(wait + s.opts.Slack):
		t.Fatalf("B's AcquireWaitCtx(%v) has not returned %v after A released", wait, wait+s.opts.Slack)
	}
	f.mustBeBusy(a, "A while B, woken, holds")
	f.mustRelease(b, true, "B, the holder")
}

// waitLimit: a waiter whose wait passes while the lock stays held reports
// (false, nil), not before the wait passed and not much after; it leaves
// nothing behind that would keep others from the lock.
func (s *suite) waitLimit(t *testing.T) {
	const wait = 200 * time.Millisecond
	f := s.fixture(t)
	a, c := f.locker(holdExpiry), f.locker(holdExpiry)
	b := waiterOf(t, f.locker(holdExpiry))
	f.mustAcquire(a, "A on a free key")
	start := time.Now()
	ok, err := b.AcquireWaitCtx(f.ctx, wait)
	elapsed := time.Since(start)
	if ok || err != nil {
		t.Fatalf("B: AcquireWaitCtx(%v) while A holds = %v, %v; want false, nil", wait, ok, err)
	}
	if elapsed < wait {
		t.Errorf("B: AcquireWaitCtx(%v) gave up after %v, before its wait passed", wait, elapsed)
	}
	if elapsed > wait+s.opts.Slack {
		t.Errorf("B: AcquireWaitCtx(%v) returned after %v; want within %v of its wait", wait, elapsed, s.opts.Slack)
	}
	f.mustRelease(a, true, "A, the holder")
	f.mustAcquire(c, "C after A released (B's abandoned wait must not block it)")
	f.mustRelease(c, true, "C, the holder")
}

// waitCancelledContext: AcquireWaitCtx with a cancelled context reports
// an error that errors.Is context.Canceled, on a free key as on a held
// one, and does not take the lock.
func (s *suite) waitCancelledContext(t *testing.T) {
	f := s.fixture(t)
	a := f.locker(holdExpiry)
	b := waiterOf(t, f.locker(holdExpiry))
	cancelled, cancel := context.WithCancel(f.ctx)
	cancel()
	if ok, err := b.AcquireWaitCtx(cancelled, time.Second); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("B: AcquireWaitCtx(cancelled context) on a free key = %v, %v; want false and an error that errors.Is context.Canceled", ok, err)
	}
	f.mustAcquire(a, "A after B's cancelled wait (it must not take the lock)")
	if ok, err := b.AcquireWaitCtx(cancelled, time.Second); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("B: AcquireWaitCtx(cancelled context) while A holds = %v, %v; want false and an error that errors.Is context.Canceled", ok, err)
	}
	f.mustRelease(a, true, "A, the holder")
}

// cancelledWhileWaiting: a waiter whose context is cancelled while it
// waits returns at once with an error that errors.Is context.Canceled,
// and leaves nothing behind that would keep others from the lock.
func (s *suite) cancelledWhileWaiting(t *testing.T) {
	f := s.fixture(t)
	a, c := f.locker(holdExpiry), f.locker(holdExpiry)
	b := waiterOf(t, f.locker(holdExpiry))
	f.mustAcquire(a, "A on a free key")
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	done := waitInBackground(ctx, b, 2*s.opts.Slack)
	stillWaits(t, done, "B waiting while A holds")
	cancelled := time.Now()
	cancel()
	select {
	case r := <-done:
		if r.ok || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("B: AcquireWaitCtx cancelled while waiting = %v, %v; want false and an error that errors.Is context.Canceled", r.ok, r.err)
		}
		if d := r.at.Sub(cancelled); d > s.opts.Slack {
			t.Errorf("B's AcquireWaitCtx returned %v after its context was cancelled; want within %v", d, s.opts.Slack)
		}
	case <-time.After(2 * s.opts.Slack):
		t.Fatalf("B's AcquireWaitCtx has not returned %v after its context was cancelled", 2*s.opts.Slack)
	}
	f.mustRelease(a, true, "A, the holder")
	f.mustAcquire(c, "C after A released (B's cancelled wait must not block it)")
	f.mustRelease(c, true, "C, the holder")
}
