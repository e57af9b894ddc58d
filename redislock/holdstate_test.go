package redislock

import (
	"sync"
	"testing"
)

func TestHoldState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps func(s *holdState)
		want  bool // mayHold afterwards: the next acquire must use the script
	}{
		{"fresh", func(s *holdState) {}, false},
		{"acquired", func(s *holdState) {
			_, seen := s.beginAcquire()
			s.endAcquire(seen, true)
		}, true},
		{"failed with unknown outcome (reply lost)", func(s *holdState) {
			_, seen := s.beginAcquire()
			s.endAcquire(seen, true) // AcquireCtx passes ok || err != nil
		}, true},
		{"refused", func(s *holdState) {
			_, seen := s.beginAcquire()
			s.endAcquire(seen, false)
		}, false},
		{"acquired then released", func(s *holdState) {
			_, seen := s.beginAcquire()
			s.endAcquire(seen, true)
			s.endRelease(s.beginRelease())
		}, false},
		{"refused while another acquire of the same instance succeeded", func(s *holdState) {
			_, a := s.beginAcquire()
			_, b := s.beginAcquire()
			s.endAcquire(b, true)
			s.endAcquire(a, false)
		}, true},
		{"refused while another acquire is in flight", func(s *holdState) {
			_, a := s.beginAcquire()
			s.beginAcquire()
			s.endAcquire(a, false)
		}, true},
		{"release answered while an acquire is in flight", func(s *holdState) {
			seen := s.beginRelease()
			s.beginAcquire()
			s.endRelease(seen)
		}, true},
		{"acquire succeeded between release sent and answered", func(s *holdState) {
			seen := s.beginRelease()
			_, a := s.beginAcquire()
			s.endAcquire(a, true)
			s.endRelease(seen)
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s holdState
			tc.steps(&s)
			if reentrant, _ := s.beginAcquire(); reentrant != tc.want {
				t.Fatalf("next acquire reentrant = %v, want %v", reentrant, tc.want)
			}
		})
	}
}

func TestOverlapped(t *testing.T) {
	var s holdState
	_, a := s.beginAcquire()
	if s.overlapped(a) {
		t.Fatal("a lone acquire reported an overlap")
	}
	_, b := s.beginAcquire()
	if !s.overlapped(a) {
		t.Fatal("two acquires in flight not reported as overlapping")
	}
	s.endAcquire(b, true)
	if !s.overlapped(a) {
		t.Fatal("an acquire that succeeded meanwhile not reported")
	}
}

// TestHoldStateConcurrent: steps taken from many goroutines at once are
// each counted once (run with -race).
func TestHoldStateConcurrent(t *testing.T) {
	var s holdState
	const goroutines, rounds = 8, 1000
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				_, seen := s.beginAcquire()
				s.endAcquire(seen, (g+i)%2 == 0)
			}
		}()
	}
	wg.Wait()
	w := s.w.Load()
	if inflight := w & inflightMask >> gainsBits; inflight != 0 {
		t.Fatalf("%d acquires in flight after all ended", inflight)
	}
	if gains := w & gainsMask; gains != goroutines*rounds/2 {
		t.Fatalf("gains = %d, want %d", gains, goroutines*rounds/2)
	}
}

// TestHoldStateGained: a fresh or only refused instance has gained
// nothing; one acquire that ended acquired or unknown, released or not,
// has.
func TestHoldStateGained(t *testing.T) {
	var s holdState
	_, seen := s.beginAcquire()
	s.endAcquire(seen, false)
	if s.gained() {
		t.Fatal("a refused instance reported a gain")
	}
	_, seen = s.beginAcquire()
	s.endAcquire(seen, true)
	s.endRelease(s.beginRelease())
	if !s.gained() {
		t.Fatal("an instance that acquired and released reported no gain")
	}
}

// TestHoldStateGainsWrap: the gains count wraps within its bits, leaving
// the acquires in flight and mayHold as they were.
func TestHoldStateGainsWrap(t *testing.T) {
	var s holdState
	s.w.Store(gainsMask)
	_, seen := s.beginAcquire()
	_, other := s.beginAcquire()
	s.endAcquire(seen, true)
	if got := s.w.Load(); got != mayHoldBit|inflightOne {
		t.Fatalf("state after the wrap = %#x, want %#x", got, uint64(mayHoldBit|inflightOne))
	}
	if !s.overlapped(other) {
		t.Fatal("a gain that wrapped the count not reported as an overlap")
	}
}

func TestTokens(t *testing.T) {
	const n = 100_000
	seen := make(map[string]struct{}, n)
	for i := 0; i < n; i++ {
		tok := newToken()
		// 26 base32 characters carry 130 bits; rand.Text fills them from
		// 128+ random bits.
		if len(tok) != 26 {
			t.Fatalf("token %q has %d characters, want 26", tok, len(tok))
		}
		if _, dup := seen[tok]; dup {
			t.Fatalf("token %q repeated after %d tokens", tok, i)
		}
		seen[tok] = struct{}{}
	}
}
