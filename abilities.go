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
		// context already cancelled with ErrLockLost; Watch of a hold whose
		// expiry has passed unnoticed ends at once, with ErrLockLost or,
		// when the implementation learns it from its own clock first,
		// ErrRenewFailed.
		Watch(ctx context.Context, opts ...WatchOption) context.Context
	}

	// A Fencer mints fencing tokens.
	Fencer interface {
		// Fence returns the token of this Locker's latest hold: every
		// acquisition of the key gets a token greater than all tokens before
		// it, so storage that remembers the greatest token it saw can refuse
		// a write from a holder that lost the lock. It is zero before the
		// first acquisition, and stays the latest hold's after a release or
		// expiry (a write with it is then refused, as it should be).
		Fence() int64
	}
)

// A Recorder is a Locker whose key can keep a result in place of its hold,
// so that a retry of a completed request gets that result instead of
// running again (idempotent replay). The Lockers of redislock.NewBackend
// are Recorders; Redlock, etcd and ZooKeeper locks are not.
type Recorder interface {
	// AcquireOrReadCtx is AcquireCtx that also reads a record: when the key
	// holds a record (RecordCtx stored it), it returns that record, with
	// acquired false and a nil error, and takes nothing. When the key is
	// free it takes the lock; when another Locker holds it, it returns
	// false, nil and a nil record.
	AcquireOrReadCtx(ctx context.Context) (acquired bool, record []byte, err error)
	// RecordCtx replaces this Locker's hold by record, kept for retain,
	// atomically and only while this Locker holds the lock: it reports false
	// with a nil error, and stores nothing, when the hold was lost. A
	// Watch of the hold ends with ErrReleased first. After an error the
	// record may or may not be stored; the hold ends at its expiry at the
	// latest.
	RecordCtx(ctx context.Context, record []byte, retain time.Duration) (bool, error)
}

// A RecordWaiter is a Recorder that can wait for the holder of its key:
// the middleware's and the interceptor's replay mode with Wait use it, so
// that a duplicate that arrives while the first request runs gets its
// result instead of a refusal. The Lockers of redislock.NewBackend are
// RecordWaiters.
type RecordWaiter interface {
	Recorder
	// AcquireOrReadWaitCtx is AcquireOrReadCtx that, while another Locker
	// holds the key, waits up to wait for the hold to end, woken when it
	// does (the holder's Locker must have been made with
	// LockerOptions.Waited): it returns the record stored in the hold's
	// place, or takes the lock when the hold was released or expired. It
	// returns false, a nil record and a nil error when wait passed first,
	// and the errors AcquireOrReadCtx returns, ctx's end included.
	AcquireOrReadWaitCtx(ctx context.Context, wait time.Duration) (acquired bool, record []byte, err error)
}

// A SemaphoreBackend is a Backend that also makes counting semaphores: up
// to a number of Lockers hold one key at once, each with its own expiry.
// The middleware's and the interceptor's limit mode need one; a Redis store
// backend is one, Redlock, etcd and ZooKeeper backends are not.
type SemaphoreBackend interface {
	Backend
	// NewSemaphore returns a Locker that holds one of permits permits of
	// key. AcquireCtx reports false with a nil error when all permits are
	// held; ReleaseCtx frees this Locker's permit only. It does no I/O, and
	// returns an error for permits < 1. When a TTLer, its TTL is the time
	// until the next permit is freed by expiry.
	NewSemaphore(key string, permits int, o LockerOptions) (Locker, error)
}

// A Refresher extends a held lock once, where a Watcher does it until
// release.
type Refresher interface {
	// RefreshCtx extends this Locker's hold to its full expiry, only while
	// it still holds the lock: it reports false with a nil error when the
	// hold was lost, and never takes a lock that is free or another's.
	RefreshCtx(ctx context.Context) (bool, error)
}

// A Checker is a Backend that can tell, before it takes any lock, whether
// it is set up to work. The middleware and the interceptor call it when
// they are built, so that a misconfigured store fails at start-up with a
// message that names the fix, not under load.
type Checker interface {
	Backend
	// Check returns an error wrapping ErrMisconfigured, naming the fix, when
	// the backend is set up wrong; any other error means the lock service
	// could not be asked now (it is down, or ctx ended), which the caller
	// logs and goes on. It returns nil when nothing is wrong.
	Check(ctx context.Context) error
}
