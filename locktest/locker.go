package locktest

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

// mutualExclusion: Lockers of one key contending from many goroutines are
// never inside together, and some of them get in. With a Waiter, half of
// them wait for the lock; with a Fencer, every holder's token is greater
// than the one before.
func (s *suite) mutualExclusion(t *testing.T) {
	const workers, rounds = 8, 25
	const wait = 50 * time.Millisecond // a waiter's limit per round
	f := s.fixture(t)
	var (
		inside, acquired atomic.Int64
		lastFence        atomic.Int64
		wg               sync.WaitGroup
	)
	for w := range workers {
		l := f.locker(holdExpiry)
		waiter, _ := l.(zerolock.Waiter)
		useWait := s.opts.Waiter && waiter != nil && w%2 == 1
		fencer, _ := l.(zerolock.Fencer)
		if !s.opts.Fencer {
			fencer = nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				var ok bool
				var err error
				if useWait {
					ok, err = waiter.AcquireWaitCtx(f.ctx, wait)
				} else {
					ok, err = l.AcquireCtx(f.ctx)
				}
				if err != nil {
					t.Errorf("worker %d: acquire = %v, %v; want no error from a healthy service", w, ok, err)
					return
				}
				if !ok {
					continue
				}
				acquired.Add(1)
				if n := inside.Add(1); n > 1 {
					t.Errorf("worker %d: %d Lockers hold the key at once", w, n)
				}
				if fencer != nil {
					if fence, prev := fencer.Fence(), lastFence.Load(); fence <= prev {
						t.Errorf("worker %d: Fence() = %d after a holder with %d; want it greater", w, fence, prev)
					} else {
						lastFence.Store(fence)
					}
				}
				runtime.Gosched() // let the others try while this one holds
				inside.Add(-1)
				if ok, err := l.ReleaseCtx(f.ctx); !ok || err != nil {
					t.Errorf("worker %d: ReleaseCtx of a held lock = %v, %v; want true, nil", w, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if acquired.Load() == 0 {
		t.Errorf("none of %d acquisitions by %d Lockers succeeded", workers*rounds, workers)
	}
}

// busyIsNotAnError: AcquireCtx on a key another Locker holds reports
// (false, nil), and leaves the holder's hold alone.
func (s *suite) busyIsNotAnError(t *testing.T) {
	f := s.fixture(t)
	a, b := f.locker(holdExpiry), f.locker(holdExpiry)
	f.mustAcquire(a, "A on a free key")
	f.mustBeBusy(b, "B while A holds")
	f.mustBeBusy(b, "B again while A holds")
	f.mustRelease(a, true, "A, still the holder after B's tries")
}

// releaseByNonHolder: ReleaseCtx by a Locker that does not hold the lock
// (one that never acquired, one whose acquire was refused) reports
// (false, nil) and does not release the holder's lock.
func (s *suite) releaseByNonHolder(t *testing.T) {
	f := s.fixture(t)
	a, b, c, d := f.locker(holdExpiry), f.locker(holdExpiry), f.locker(holdExpiry), f.locker(holdExpiry)
	f.mustRelease(c, false, "C, never acquired, on a free key")
	f.mustAcquire(a, "A on a free key")
	f.mustRelease(c, false, "C, never acquired, while A holds")
	f.mustBeBusy(b, "B while A holds")
	f.mustRelease(b, false, "B, refused, while A holds")
	f.mustBeBusy(d, "D after non-holders released (A's hold must survive them)")
	f.mustRelease(a, true, "A, the holder")
}

// releaseThenAcquire: a released lock is free for another Locker at once;
// releasing twice reports (false, nil) the second time.
func (s *suite) releaseThenAcquire(t *testing.T) {
	f := s.fixture(t)
	a, b := f.locker(holdExpiry), f.locker(holdExpiry)
	f.mustAcquire(a, "A on a free key")
	f.mustRelease(a, true, "A, the holder")
	f.mustRelease(a, false, "A, already released")
	f.mustAcquire(b, "B after A released")
	f.mustBeBusy(a, "A while B holds")
	f.mustRelease(b, true, "B, the holder")
	f.mustAcquire(a, "A after B released")
	f.mustRelease(a, true, "A, the holder again")
}

// reentrant: AcquireCtx by the holder reports true, one ReleaseCtx ends the
// hold however often it was acquired, and a re-entrant acquire refreshes
// the expiry: the hold lasts its expiry from the refresh, not from the
// first acquire.
func (s *suite) reentrant(t *testing.T) {
	f := s.fixture(t)
	a, b := f.locker(holdExpiry), f.locker(holdExpiry)
	f.mustAcquire(a, "A on a free key")
	f.mustAcquire(a, "A again, holding (re-entrant)")
	f.mustBeBusy(b, "B while A holds twice over")
	f.mustRelease(a, true, "A, the holder")
	f.mustAcquire(b, "B after A's one release")
	f.mustRelease(b, true, "B, the holder")

	expiry := s.opts.Expiry
	short := f.locker(expiry)
	start := time.Now()
	f.mustAcquire(short, "A' (short expiry) on a free key")
	sleepUntil(start.Add(expiry / 2))
	refreshed := time.Now()
	f.mustAcquire(short, "A' again, halfway through its expiry (re-entrant)")
	// The refreshed hold lasts until refreshed+expiry at least; probing
	// until three quarters of that crosses the first hold's end.
	for time.Since(refreshed) < expiry*3/4 {
		if ok, at := f.probe(b, "B while A' holds a refreshed hold"); ok {
			if d := at.Sub(refreshed); d < expiry-clockSlop {
				t.Fatalf("B got the lock %v after A' refreshed its hold, before its expiry %v: the re-entrant acquire did not refresh it", d, expiry)
			}
			return // a slow answer that came after the refreshed expiry
		}
		time.Sleep(pollEvery)
	}
}

// cancelledContext: AcquireCtx with a context that has ended reports an
// error that errors.Is the context's, and does not take the lock.
func (s *suite) cancelledContext(t *testing.T) {
	f := s.fixture(t)
	a, b := f.locker(holdExpiry), f.locker(holdExpiry)
	cancelled, cancel := context.WithCancel(f.ctx)
	cancel()
	if ok, err := a.AcquireCtx(cancelled); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("A: AcquireCtx(cancelled context) = %v, %v; want false and an error that errors.Is context.Canceled", ok, err)
	}
	expired, cancel := context.WithDeadline(f.ctx, time.Now().Add(-time.Second))
	defer cancel()
	if ok, err := a.AcquireCtx(expired); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("A: AcquireCtx(context past its deadline) = %v, %v; want false and an error that errors.Is context.DeadlineExceeded", ok, err)
	}
	f.mustAcquire(b, "B after A's acquires with ended contexts (they must not take the lock)")
	f.mustRelease(b, true, "B, the holder")
}
