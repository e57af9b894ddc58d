package zerolock

import "errors"

// The causes of a Watcher's context (context.Cause), shared by every
// backend so that one errors.Is check serves them all.
var (
	// ErrLockLost: the hold is gone (the key deleted or holding another
	// token, the session expired): the lock no longer protects the work.
	ErrLockLost = errors.New("zerolock: lock lost")
	// ErrRenewFailed: renewals have failed for so long that the hold may
	// have expired. It is decided on this process's monotonic clock with a
	// safety margin, before the lock service could expire it.
	ErrRenewFailed = errors.New("zerolock: renewal failed, the lock may have expired")
	// ErrMaxHold: the maximum hold time given to Watch has passed; renewals
	// stop.
	ErrMaxHold = errors.New("zerolock: maximum hold time reached")
	// ErrReleased: ReleaseCtx ended the hold.
	ErrReleased = errors.New("zerolock: lock released")
)

// ErrMisconfigured is wrapped by a backend's errors that say it is set up
// wrong rather than down: a server that rejects a command its client sends
// on every connection, a key that holds what no lock of its kind wrote. Such
// a store answers, but will not work until it is fixed, so the middleware's
// and the interceptor's FailOpen never serves requests unlocked on it, and
// a Checker's start-up refusal wraps it.
var ErrMisconfigured = errors.New("zerolock: lock backend misconfigured")
