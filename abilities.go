package zerolock

import (
	"context"
	"time"
)

// The optional abilities of a Locker. The middleware and the interceptor
// discover them with a type assertion: Retry-After comes from a TTLer,
// Renew needs a Watcher and Fence a Fencer, and a configuration that asks
// for an ability its backend's Lockers lack is refused at start-up.
type (
	// A TTLer tells how long the lock's current hold has left.
	TTLer interface {
		// TTL returns the remaining time of whoever holds the lock, as the
		// lock service sees it; zero or less when nobody holds it.
		TTL(ctx context.Context) (time.Duration, error)
	}

	// A Watcher keeps a held lock alive while work runs.
	Watcher interface {
		// Watch renews the hold until ReleaseCtx, and returns a context,
		// derived from ctx, that is cancelled when the hold ends. Its
		// context.Cause is ErrLockLost when the hold was lost (deleted,
		// taken over, or its session expired), ErrRenewFailed when renewals
		// failed for so long that the hold may have expired (decided before
		// it could expire), ErrMaxHold when MaxHold passed, and ErrReleased
		// after ReleaseCtx. Watch of a lock that is not held returns a
		// context already cancelled with ErrLockLost.
		Watch(ctx context.Context, opts ...WatchOption) context.Context
	}

	// A Fencer mints fencing tokens.
	Fencer interface {
		// Fence returns the token of the current hold: every acquisition of
		// the key gets a token greater than all tokens before it, so storage
		// that remembers the greatest token it saw can refuse a write from a
		// holder that lost the lock. Zero when the lock is not held.
		Fence() int64
	}
)
