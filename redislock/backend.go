package redislock

import (
	"context"
	"time"
)

// A Locker is one lock on one resource, as the REST middleware and the gRPC
// interceptor use it. *RedisLock and *RedLock are Lockers; so can be a lock
// on another service. A Locker may also offer:
//
//	TTL(ctx) (time.Duration, error)                   // the holder's remaining time, for Retry-After
//	Watch(ctx, ...WatchOption) context.Context        // renewal with a lost-lock signal, for Renew
//	Fence() int64                                     // a fencing token, for Fence
//
// A Locker that can wait for the lock also offers Waiter's method.
type Locker interface {
	AcquireCtx(ctx context.Context) (bool, error)
	ReleaseCtx(ctx context.Context) (bool, error)
}

// A Waiter is a Locker that can wait up to wait for the lock, as
// RedisLock.AcquireWaitCtx does: true once held, false when wait passed.
type Waiter interface {
	Locker
	AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error)
}

// LockerOptions say how a Backend's lock should behave.
type LockerOptions struct {
	// Expiry is the lock's lifetime, exactly: no tolerance is added.
	Expiry time.Duration
	// Fencing asks for a fencing token per acquisition.
	Fencing bool
}

// A Backend makes Lockers: a Redis store, a Redlock over several masters,
// or another lock service. The middleware and the interceptor take one.
type Backend interface {
	NewLocker(key string, o LockerOptions) Locker
}

// StoreBackend is the Backend of RedisLocks in one store. opts apply to
// every lock it makes (WithDeadlineGuard, say), before the expiry and
// fencing that LockerOptions set.
func StoreBackend(store Store, opts ...Option) Backend {
	return storeBackend{store: store, setGet: new(setGetSupport), opts: opts}
}

type storeBackend struct {
	store  Store
	setGet *setGetSupport
	opts   []Option
}

func (b storeBackend) NewLocker(key string, o LockerOptions) Locker {
	opts := append(b.opts[:len(b.opts):len(b.opts)], WithExpiry(o.Expiry), WithTolerance(0), sharedSetGet(b.setGet))
	if o.Fencing {
		opts = append(opts, WithFencing())
	}
	return New(b.store, key, opts...)
}

// RedLockBackend is the Backend of RedLocks over independent masters. Its
// locks have no TTL, Watch or Fence: Retry-After is the rule's expiry, and
// the middleware and interceptor refuse Renew and Fence with it.
func RedLockBackend(stores []Store, opts ...Option) Backend {
	// One memory of SET NX GET refusals for all nodes: a node older than
	// Redis 7.0 sends every node's fresh acquire to the script, which is
	// always correct.
	opts = append(opts[:len(opts):len(opts)], sharedSetGet(new(setGetSupport)))
	return redLockBackend{stores: stores, opts: opts}
}

type redLockBackend struct {
	stores []Store
	opts   []Option
}

func (b redLockBackend) NewLocker(key string, o LockerOptions) Locker {
	opts := append([]Option{WithExpiry(o.Expiry), WithTolerance(0)}, b.opts...)
	return NewRedLock(b.stores, key, opts...)
}

var (
	_ Locker = (*RedisLock)(nil)
	_ Locker = (*RedLock)(nil)
	_ Waiter = (*RedisLock)(nil)
)
