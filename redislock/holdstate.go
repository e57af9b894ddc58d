package redislock

import "sync"

// holdState tracks whether the lock's key may hold this instance's token.
//
// Only an acquire by this instance can write its token, so while no acquire
// is in flight and none has succeeded (or ended unknown) since the key was
// last seen without the token, the key almost certainly does not hold it.
// Then a plain SET NX PX (sent once, on go-redis; on go-zero's store
// followed by the script when refused) or SET NX PX GET (on other stores,
// and on go-zero's after a refusal) gives the same answer as the re-entrant script, with no
// script on the server: that is the common path (a fresh lock, a lock
// after Release or after a refused try). In every other case the script
// decides. It also decides when another acquire on this instance overlapped
// a refused SET NX (that acquire may have written our token), and when SET
// ... GET finds our own token (a resend by the client library, an
// overlapping acquire, or a call that timed out on the client and ran on
// the server later).
//
// Getting this wrong in the unsafe direction is impossible: SET NX never
// takes a key somebody else holds.
type holdState struct {
	mu       sync.Mutex
	mayHold  bool
	inflight int    // acquires sent and not yet answered
	gains    uint64 // acquires that ended acquired or unknown
}

// beginAcquire reports whether the script is needed and the gains seen now.
func (s *holdState) beginAcquire() (reentrant bool, seen uint64) {
	s.mu.Lock()
	reentrant = s.mayHold
	s.mayHold = true
	s.inflight++
	seen = s.gains
	s.mu.Unlock()
	return reentrant, seen
}

// endAcquire records an acquire's outcome: held reports that the key may
// hold the token afterwards (acquired, or failed with unknown outcome).
func (s *holdState) endAcquire(seen uint64, held bool) {
	s.mu.Lock()
	s.inflight--
	if held {
		s.gains++
	} else {
		s.clearIfQuiet(seen)
	}
	s.mu.Unlock()
}

// overlapped reports whether another acquire on this instance is in flight
// or has ended acquired-or-unknown since the one that saw seen began.
func (s *holdState) overlapped(seen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inflight > 1 || s.gains != seen
}

// beginRelease returns the gains seen when a release is sent.
func (s *holdState) beginRelease() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gains
}

// endRelease records a release that Redis answered: the key no longer holds
// the token, unless an acquire raced it. It reports whether the instance is
// now known not to hold the lock.
func (s *holdState) endRelease(seen uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clearIfQuiet(seen)
}

func (s *holdState) clearIfQuiet(seen uint64) bool {
	if s.inflight == 0 && s.gains == seen {
		s.mayHold = false
		return true
	}
	return false
}
