package zerolock

import (
	"context"
	"time"
)

// A Locker is one lock on one resource.
//
// An implementation guarantees mutual exclusion: while AcquireCtx has
// reported true to one Locker and neither its ReleaseCtx has run nor its
// expiry has passed, AcquireCtx on every other Locker of the same key
// reports false. All methods are safe for concurrent use.
type Locker interface {
	// AcquireCtx tries once to take the lock, without waiting for a holder.
	// It reports true when this Locker holds the lock afterwards (taken, or
	// already held and its expiry refreshed), and false with a nil error
	// when another Locker holds it: being busy is not an error. An error
	// means the lock service could not answer; the lock may or may not be
	// held then, and a later AcquireCtx or ReleaseCtx on the same Locker
	// settles it. When ctx has ended the error satisfies errors.Is with
	// context.Canceled or context.DeadlineExceeded.
	AcquireCtx(ctx context.Context) (bool, error)
	// ReleaseCtx releases the lock if this Locker holds it. It reports true
	// when it released a hold, and false with a nil error when there was
	// none (never acquired, already released, expired, or taken over): it
	// never releases another Locker's hold. An error means the service could
	// not answer; the hold then ends at its expiry at the latest.
	ReleaseCtx(ctx context.Context) (bool, error)
}

// A Waiter is a Locker that can wait for the lock.
type Waiter interface {
	Locker
	// AcquireWaitCtx is AcquireCtx that waits up to wait for a holder to
	// release or expire: true once held, false with a nil error when wait
	// passed first. An ended ctx is an error, as for AcquireCtx.
	AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error)
}

// LockerOptions say how a Backend's lock behaves.
type LockerOptions struct {
	// Expiry is the lock's lifetime: a hold that is neither released nor
	// renewed ends after it, so a crashed holder frees the lock. It is
	// exact: no tolerance is added. A backend whose service counts expiry
	// in coarser units rounds it up.
	Expiry time.Duration
	// Fencing asks for a fencing token per acquisition (see Fencer). A
	// backend that cannot mint one returns Lockers that are not Fencers.
	Fencing bool
	// Name is what the lock reports itself as in metrics and traces (see
	// package observe): a bounded label, such as a route or a method,
	// never the key. Empty means "unnamed".
	Name string
	// Waited says that callers may wait on the key (Waiter, RecordWaiter):
	// the lock's releases and stored records must wake them, even on a
	// backend set not to announce releases (redislock.WithoutWakeups).
	Waited bool
}

// A Backend makes Lockers on one lock service: a Redis store, a Redlock
// over several masters, etcd, ZooKeeper. The REST middleware and the gRPC
// interceptor take one.
type Backend interface {
	// NewLocker returns a Locker on key. It does no I/O; Lockers of one
	// key from one Backend exclude each other.
	NewLocker(key string, o LockerOptions) Locker
}
