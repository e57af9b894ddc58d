package locktest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

// expiry: a hold that is neither released nor watched ends after its
// expiry, and not before: another Locker is refused until then and gets
// the lock soon after. The expired holder's ReleaseCtx then reports
// (false, nil) and leaves the new holder's hold alone; a Fencer's new
// holder has the greater token, and a Watcher's Watch of the expired hold
// ends as lost.
func (s *suite) expiry(t *testing.T) {
	f := s.fixture(t)
	expiry := s.opts.Expiry
	a := f.locker(expiry)
	b, c := f.locker(holdExpiry), f.locker(holdExpiry)
	start := time.Now()
	f.mustAcquire(a, "A (short expiry) on a free key")
	deadline := start.Add(s.opts.held() + s.opts.Slack)
	refused := 0
	for {
		ok, at := f.probe(b, "B while A's hold lives")
		if ok {
			if d := at.Sub(start); d < expiry-clockSlop {
				t.Fatalf("B got the lock %v after A acquired it, before A's expiry %v (refused %d times before)", d, expiry, refused)
			}
			break
		}
		refused++
		if at.After(deadline) {
			t.Fatalf("B still refused %v after A acquired the lock with expiry %v and never released it: the hold did not expire",
				at.Sub(start).Round(time.Millisecond), expiry)
		}
		time.Sleep(pollEvery)
	}

	if s.opts.Watcher {
		if w, ok := a.(zerolock.Watcher); ok {
			s.watchOfExpiredHold(t, f, w)
		}
	}
	f.mustRelease(a, false, "A, whose hold expired and B took over")
	f.mustBeBusy(c, "C after A's release of its expired hold (B's hold must survive it)")
	if s.opts.Fencer {
		fa, fb := fence(t, a), fence(t, b)
		if fb <= fa {
			t.Errorf("Fence() of B, which took over A's expired hold, = %d; want greater than A's %d", fb, fa)
		}
	}
	f.mustRelease(b, true, "B, the holder")
}

// watchOfExpiredHold: Watch of a hold that expired and was taken over
// ends as lost. The Locker may not know yet that its hold ended, so the
// context may end a little later, and with ErrRenewFailed (its validity
// passed on its own clock) as well as ErrLockLost.
func (s *suite) watchOfExpiredHold(t *testing.T, f *fixture, w zerolock.Watcher) {
	t.Helper()
	ctx := w.Watch(f.ctx)
	select {
	case <-ctx.Done():
	case <-time.After(s.opts.Slack):
		t.Fatalf("A's Watch of its hold that expired and was taken over still runs after %v", s.opts.Slack)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, zerolock.ErrLockLost) && !errors.Is(cause, zerolock.ErrRenewFailed) {
		t.Errorf("context.Cause of A's Watch of an expired hold = %v; want ErrLockLost (or ErrRenewFailed)", cause)
	}
}

// fence returns l's Fence(), failing the check when l is not a Fencer.
func fence(t *testing.T, l zerolock.Locker) int64 {
	t.Helper()
	fencer, ok := l.(zerolock.Fencer)
	if !ok {
		t.Fatalf("Options.Fencer claims the ability, but the Locker (%T) is not a zerolock.Fencer", l)
	}
	return fencer.Fence()
}
