package redislock

import "errors"

var (
	// ErrInvalidExpiry is returned by AcquireCtx when the expiry plus the
	// tolerance is not a positive number of milliseconds.
	ErrInvalidExpiry = errors.New("redislock: expiry plus tolerance must be at least 1ms")

	// ErrUnexpectedReply is returned when Redis answers a lock script with a
	// reply the script cannot produce, which means something other than this
	// package wrote the key or the server is not Redis-compatible.
	ErrUnexpectedReply = errors.New("redislock: unexpected reply from redis")

	// ErrLockLost is the cause of a watched lock's context when the key is
	// gone or holds another token: the lock no longer protects the work.
	ErrLockLost = errors.New("redislock: lock lost")
	// ErrRenewFailed is the cause of a watched lock's context when renewals
	// have failed for so long that the lock may have expired. It is decided
	// on this process's monotonic clock with a safety margin, before Redis
	// could expire the key.
	ErrRenewFailed = errors.New("redislock: renewal failed, the lock may have expired")
	// ErrMaxHold is the cause of a watched lock's context when the maximum
	// hold time given to Watch has passed; renewals stop.
	ErrMaxHold = errors.New("redislock: maximum hold time reached")
	// ErrReleased is the cause of a watched lock's context after Release.
	ErrReleased = errors.New("redislock: lock released")

	// ErrIdentityRejected is returned by CheckGoZeroStore, and by every
	// command of a lock on go-zero's store, when the store sends CLIENT
	// SETINFO on new connections and the server rejects it: go-zero's
	// circuit breaker would count each rejection and open under a burst of
	// new connections. The error names the fix: DisableIdentity: true.
	ErrIdentityRejected = errors.New("redislock: the Redis server rejects CLIENT SETINFO, which this go-zero store sends on every new connection")

	// ErrNoExpiry is returned by TTL when the lock's key exists without an
	// expiry, which a lock never leaves behind: another writer set the key.
	ErrNoExpiry = errors.New("redislock: key exists without an expiry")
)
