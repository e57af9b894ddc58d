package locktest

import (
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

// refresher: RefreshCtx extends a live hold past its expiry, reports
// false (and takes nothing) for a hold that is gone, released or another
// Locker's, and never takes a free key.
func (s *suite) refresher(t *testing.T) {
	if !s.opts.Refresher {
		t.Skip("Options.Refresher does not claim the ability")
	}
	f := s.fixture(t)
	expiry := s.opts.Expiry
	a, b := f.locker(expiry), f.locker(holdExpiry)
	ra := refresherOf(t, a)
	refresh := func(want bool, who string) {
		t.Helper()
		if ok, err := ra.RefreshCtx(f.ctx); ok != want || err != nil {
			t.Fatalf("%s: RefreshCtx = %v, %v; want %v, nil", who, ok, err, want)
		}
	}

	refresh(false, "A on a key nobody holds")
	f.mustAcquire(b, "B after A's refresh of a free key (a refresh must not take it)")
	refresh(false, "A while B holds")
	f.mustRelease(b, true, "B, the holder")

	// A keeps its hold alive by refreshing a few times per expiry for
	// twice the expiry; B must stay refused all along.
	f.mustAcquire(a, "A (short expiry) on a free key")
	start := time.Now()
	for time.Since(start) < 2*s.opts.held() {
		refresh(true, "A, the holder, refreshing")
		f.mustBeBusy(b, "B while A refreshes its hold")
		time.Sleep(roundUp(expiry, s.opts.ExpiryUnit) / 4)
	}
	// Left alone, the hold expires; a late refresh then finds it gone.
	deadline := time.Now().Add(s.opts.held() + s.opts.Slack)
	for {
		if ok, _ := f.probe(b, "B after A stopped refreshing"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still refused %v after A's last refresh: the refreshed hold did not expire", s.opts.held()+s.opts.Slack)
		}
		time.Sleep(pollEvery)
	}
	refresh(false, "A, whose hold expired and B took over")
	f.mustRelease(b, true, "B, the holder (A's late refresh must not have touched its hold)")

	f.mustAcquire(a, "A again")
	f.mustRelease(a, true, "A, the holder")
	refresh(false, "A after its release")
	f.mustAcquire(b, "B after A's release and refresh")
	f.mustRelease(b, true, "B, the holder")
}

// refresherOf returns l as a Refresher, failing the check when it is not.
func refresherOf(t *testing.T, l zerolock.Locker) zerolock.Refresher {
	t.Helper()
	r, ok := l.(zerolock.Refresher)
	if !ok {
		t.Fatalf("the Locker (%T) is not a zerolock.Refresher", l)
	}
	return r
}
