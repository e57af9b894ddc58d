package redislock

import (
	"errors"

	"github.com/zerolock/zerolock"
)

var (
	// ErrInvalidExpiry is returned by AcquireCtx when the expiry plus the
	// tolerance is not a positive number of milliseconds.
	ErrInvalidExpiry = errors.New("redislock: expiry plus tolerance must be at least 1ms")

	// ErrUnexpectedReply is returned when Redis answers a lock script with a
	// reply the script cannot produce, which means something other than this
	// package wrote the key or the server is not Redis-compatible.
	ErrUnexpectedReply = errors.New("redislock: unexpected reply from redis")

	// ErrIdentityRejected is returned by CheckGoZeroStore, and by every
	// command of a lock on go-zero's store, when the store sends CLIENT
	// SETINFO on new connections and the server rejects it: go-zero's
	// circuit breaker would count each rejection and open under a burst of
	// new connections. The error names the fix: DisableIdentity: true. It
	// is also a zerolock.ErrMisconfigured.
	ErrIdentityRejected = misconfigured("redislock: the Redis server rejects CLIENT SETINFO, which this go-zero store sends on every new connection")

	// ErrWaitCutTry is returned by a waiting acquire (AcquireWaitCtx of
	// every lock kind here) whose wait limit ended a try that was still in
	// flight, which happens only where calls return by their deadline
	// (WithDeadlineGuard, or a go-redis client with ContextTimeoutEnabled).
	// The try may still land, so the lock, permit or share may or may not
	// be held, as after any error: a later acquire or release on the same
	// instance settles it. The error also wraps the try's own error
	// (context.DeadlineExceeded).
	ErrWaitCutTry = errors.New("redislock: the wait limit ended a try in flight, whose outcome is unknown")

	// ErrNoExpiry is returned by TTL when the lock's key exists without an
	// expiry, which a lock never leaves behind: another writer set the key.
	ErrNoExpiry = errors.New("redislock: key exists without an expiry")
)

// misconfiguredError is a sentinel of this package that says the store is
// set up wrong: errors.Is matches it, and also zerolock.ErrMisconfigured,
// which the middleware's and the interceptor's FailOpen tests for.
type misconfiguredError struct{ msg string }

func misconfigured(msg string) error { return &misconfiguredError{msg: msg} }

func (e *misconfiguredError) Error() string { return e.msg }

func (e *misconfiguredError) Is(target error) bool { return target == zerolock.ErrMisconfigured }
