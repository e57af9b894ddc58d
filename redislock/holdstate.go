package redislock

import "sync/atomic"

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
	// w packs the state into one word, so that each step is one atomic
	// operation rather than a mutex's two (a lock made per request takes
	// four steps): bit 63 mayHold, bits 40-62 the acquires sent and not yet
	// answered (inflight), bits 0-39 the acquires that ended acquired or
	// unknown (gains, counted modulo 2^40: compared for equality, and
	// with zero by setNXArgs, which after a wrap costs an allocation).
	w atomic.Uint64
}

const (
	gainsBits    = 40
	gainsMask    = 1<<gainsBits - 1
	inflightOne  = 1 << gainsBits
	inflightMask = (1<<23 - 1) << gainsBits // 8M acquires in flight on one instance
	mayHoldBit   = 1 << 63
)

// beginAcquire reports whether the script is needed and the gains seen now.
func (s *holdState) beginAcquire() (reentrant bool, seen uint64) {
	for {
		old := s.w.Load()
		if s.w.CompareAndSwap(old, (old|mayHoldBit)+inflightOne) {
			return old&mayHoldBit != 0, old & gainsMask
		}
	}
}

// endAcquire records an acquire's outcome: held reports that the key may
// hold the token afterwards (acquired, or failed with unknown outcome).
func (s *holdState) endAcquire(seen uint64, held bool) {
	for {
		old := s.w.Load()
		w := old - inflightOne
		switch {
		case held:
			w = w&^gainsMask | (w+1)&gainsMask
		case quiet(w, seen):
			w &^= mayHoldBit
		}
		if s.w.CompareAndSwap(old, w) {
			return
		}
	}
}

// overlapped reports whether another acquire on this instance is in flight
// or has ended acquired-or-unknown since the one that saw seen began.
func (s *holdState) overlapped(seen uint64) bool {
	w := s.w.Load()
	return w&inflightMask > inflightOne || w&gainsMask != seen
}

// gained reports whether any acquire has ended acquired or unknown. (The
// count wraps to zero after 2^40 of them: a refusal seen then keeps the
// hold-time metric's start of the hold before, nothing else.)
func (s *holdState) gained() bool {
	return s.w.Load()&gainsMask != 0
}

// beginRelease returns the gains seen when a release is sent.
func (s *holdState) beginRelease() uint64 {
	return s.w.Load() & gainsMask
}

// endRelease records a release that Redis answered: the key no longer holds
// the token, unless an acquire raced it. It reports whether the instance is
// now known not to hold the lock.
func (s *holdState) endRelease(seen uint64) bool {
	for {
		old := s.w.Load()
		if !quiet(old, seen) {
			return false
		}
		if old&mayHoldBit == 0 || s.w.CompareAndSwap(old, old&^mayHoldBit) {
			return true
		}
	}
}

// quiet reports whether state w has no acquire in flight and none ended
// acquired-or-unknown since gains were seen.
func quiet(w, seen uint64) bool {
	return w&inflightMask == 0 && w&gainsMask == seen
}
