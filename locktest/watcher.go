package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

// watcher runs the checks of a Watcher, when the deployment claims one.
func (s *suite) watcher(t *testing.T) {
	if !s.opts.Watcher {
		t.Skip("Options.Watcher does not claim the ability")
	}
	t.Run("KeepsHold", s.watchKeepsHold)
	t.Run("NotHeld", s.watchNotHeld)
	t.Run("ParentCancelled", s.watchParentCancelled)
}

// watcherOf returns l as a Watcher, failing the check when it is not one.
func watcherOf(t *testing.T, l zerolock.Locker) zerolock.Watcher {
	t.Helper()
	w, ok := l.(zerolock.Watcher)
	if !ok {
		t.Fatalf("Options.Watcher claims the ability, but the Locker (%T) is not a zerolock.Watcher", l)
	}
	return w
}

// watchKeepsHold: a watched hold outlives its expiry, with its context
// alive, until ReleaseCtx, which ends the context with ErrReleased before
// it returns and frees the lock.
//
// A Watcher that could not renew in time may end the context with
// ErrRenewFailed before its hold could expire: that is the contract
// working (a machine too loaded to renew a short hold), not a breach, so
// the check then tries again with twice the expiry, a few times.
func (s *suite) watchKeepsHold(t *testing.T) {
	const tries = 3
	expiry := s.opts.Expiry
	for try := 1; ; try++ {
		cause := s.watchKeepsHoldOnce(t, expiry)
		if cause == nil {
			return
		}
		if try == tries {
			t.Fatalf("A's Watch ended with %v in all %d tries, the last with expiry %v: it never kept a hold", cause, tries, expiry)
		}
		t.Logf("A's Watch of a hold with expiry %v ended with %v (renewals too late on a loaded machine?); trying again with twice the expiry", expiry, cause)
		expiry *= 2
	}
}

// watchKeepsHoldOnce runs watchKeepsHold with expiry, on a key of its own.
// It returns the cause when the Watch ended with ErrRenewFailed while the
// hold lived, and nil when the check passed.
func (s *suite) watchKeepsHoldOnce(t *testing.T, expiry time.Duration) error {
	t.Helper()
	f := s.fixture(t)
	a, b := f.locker(expiry), f.locker(holdExpiry)
	w := watcherOf(t, a)
	start := time.Now()
	f.mustAcquire(a, "A (short expiry) on a free key")
	// Renewing more often than the default spares a loaded machine
	// needless retries: this checks that Watch keeps the hold, not how
	// late it may renew.
	ctx := w.Watch(f.ctx, zerolock.RenewEvery(expiry/5))
	// An unwatched hold would have ended by then; half an expiry more
	// gives a broken Watch time to show.
	held := roundUp(expiry, s.opts.ExpiryUnit) + s.opts.ExpiryLag
	for until := start.Add(held + expiry/2); time.Now().Before(until); {
		ok, at := f.probe(b, "B while A watches its hold")
		if cause := context.Cause(ctx); ctx.Err() != nil {
			if errors.Is(cause, zerolock.ErrRenewFailed) {
				return cause
			}
			t.Fatalf("A's Watch context ended %v after the acquire, while A held the lock: cause %v",
				time.Since(start).Round(time.Millisecond), cause)
		}
		if ok {
			t.Fatalf("B got the lock %v after A acquired it with expiry %v and watched it, with A's Watch context alive",
				at.Sub(start).Round(time.Millisecond), expiry)
		}
		time.Sleep(pollEvery)
	}
	f.mustRelease(a, true, "A, the watched holder")
	select {
	case <-ctx.Done():
	default:
		t.Fatal("A's Watch context is not done when A's ReleaseCtx returned")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, zerolock.ErrReleased) {
		t.Errorf("context.Cause of A's Watch after its ReleaseCtx = %v; want ErrReleased", cause)
	}
	f.mustAcquire(b, "B after A released its watched hold")
	f.mustRelease(b, true, "B, the holder")
	return nil
}

// watchNotHeld: Watch of a lock that is not held (never acquired, or
// released) returns a context already done with ErrLockLost.
func (s *suite) watchNotHeld(t *testing.T) {
	f := s.fixture(t)
	a := f.locker(holdExpiry)
	w := watcherOf(t, a)
	lost := func(when string) {
		t.Helper()
		ctx := w.Watch(f.ctx)
		select {
		case <-ctx.Done():
		default:
			t.Fatalf("Watch of a Locker that %s returned a context that is not done", when)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, zerolock.ErrLockLost) {
			t.Errorf("context.Cause of Watch of a Locker that %s = %v; want ErrLockLost", when, cause)
		}
	}
	lost("never acquired")
	f.mustAcquire(a, "A on a free key")
	f.mustRelease(a, true, "A, the holder")
	lost("released its hold")
}

// watchParentCancelled: the Watch context derives from the context Watch
// was given, so it ends when that one does; the hold stays until released.
func (s *suite) watchParentCancelled(t *testing.T) {
	f := s.fixture(t)
	a, b := f.locker(holdExpiry), f.locker(holdExpiry)
	w := watcherOf(t, a)
	f.mustAcquire(a, "A on a free key")
	parent, cancel := context.WithCancel(f.ctx)
	ctx := w.Watch(parent)
	if ctx.Err() != nil {
		t.Fatalf("A's Watch of its hold returned a context already done: cause %v", context.Cause(ctx))
	}
	cancel()
	select {
	case <-ctx.Done():
	case <-time.After(s.opts.Slack):
		t.Fatalf("A's Watch context is not done %v after the context given to Watch was cancelled", s.opts.Slack)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, context.Canceled) {
		t.Errorf("context.Cause of A's Watch after its parent was cancelled = %v; want context.Canceled", cause)
	}
	f.mustBeBusy(b, "B after A's Watch ended with its parent (A still holds)")
	f.mustRelease(a, true, "A, the holder")
}
