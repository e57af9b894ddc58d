package redislock

import "github.com/zerolock/zerolock"

// StoreBackend is the zerolock.Backend of RedisLocks in one store, for the
// middleware's and the interceptor's WithBackend constructors. opts apply
// to every lock it makes (WithDeadlineGuard, say), before the expiry and
// fencing that the zerolock.LockerOptions set.
func StoreBackend(store Store, opts ...Option) zerolock.Backend {
	return storeBackend{store: store, setGet: new(setGetSupport), opts: opts}
}

type storeBackend struct {
	store  Store
	setGet *setGetSupport
	opts   []Option
}

func (b storeBackend) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	opts := append(b.opts[:len(b.opts):len(b.opts)], WithExpiry(o.Expiry), WithTolerance(0), sharedSetGet(b.setGet))
	if o.Fencing {
		opts = append(opts, WithFencing())
	}
	return New(b.store, key, opts...)
}

// NewSemaphore returns a Semaphore of permits on key in the backend's
// store, for the middleware's and the interceptor's limit mode. The
// backend's options apply first (WithoutWakeups only when they include
// it), then o's expiry, with no tolerance added. It returns
// ErrInvalidPermits for permits < 1.
func (b storeBackend) NewSemaphore(key string, permits int, o zerolock.LockerOptions) (zerolock.Locker, error) {
	opts := append(b.opts[:len(b.opts):len(b.opts)], WithExpiry(o.Expiry), WithTolerance(0))
	s, err := NewSemaphore(b.store, key, permits, opts...)
	if err != nil {
		return nil, err // not a nil *Semaphore in a non-nil Locker
	}
	return s, nil
}

// RedLockBackend is the zerolock.Backend of RedLocks over independent
// masters. Its locks are not TTLers, Watchers or Fencers: Retry-After is the
// rule's expiry, and the middleware and interceptor refuse Renew and Fence
// with it.
func RedLockBackend(stores []Store, opts ...Option) zerolock.Backend {
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

func (b redLockBackend) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	opts := append([]Option{WithExpiry(o.Expiry), WithTolerance(0)}, b.opts...)
	return NewRedLock(b.stores, key, opts...)
}

var (
	_ zerolock.Locker    = (*RedisLock)(nil)
	_ zerolock.Waiter    = (*RedisLock)(nil)
	_ zerolock.TTLer     = (*RedisLock)(nil)
	_ zerolock.Watcher   = (*RedisLock)(nil)
	_ zerolock.Fencer    = (*RedisLock)(nil)
	_ zerolock.Locker    = (*RedLock)(nil)
	_ zerolock.Refresher = (*RedisLock)(nil)

	_ zerolock.SemaphoreBackend = storeBackend{}
)
