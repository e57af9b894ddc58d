package redislock

import (
	"context"
	"errors"
	"sync"

	"github.com/zerolock/zerolock"
)

// NewBackend returns the zerolock.Backend of RedisLocks in one store, for the
// middleware's and the interceptor's WithBackend constructors. opts apply
// to every lock it makes (WithDeadlineGuard, say), before the expiry,
// fencing and name that the zerolock.LockerOptions set (a name given
// WithName stays when LockerOptions.Name is empty). The rule of Option
// holds for each lock: an option a RedisLock refuses makes every acquire
// of its locks fail, and one a Semaphore refuses (WithFencing,
// WithReplicaAcks) makes its NewSemaphore fail.
func NewBackend(store Store, opts ...Option) zerolock.Backend {
	return storeBackend{store: store, setGet: new(setGetSupport), opts: opts}
}

type storeBackend struct {
	store  Store
	setGet *setGetSupport
	opts   []Option
}

func (b storeBackend) NewLocker(key string, lo zerolock.LockerOptions) zerolock.Locker {
	o := b.options(lo)
	o.setGet = b.setGet
	o.fencing = o.fencing || lo.Fencing
	return recordingLock{newObservedLock(b.store, key, o)}
}

// Check refuses a go-zero store whose server rejects the CLIENT SETINFO
// that the store sends on every new connection, with an error wrapping
// ErrIdentityRejected (and zerolock.ErrMisconfigured) that names the fix,
// DisableIdentity: true. A server that cannot be reached now returns its
// error; a lock checks again before its first command. Other stores have
// nothing to check.
func (b storeBackend) Check(ctx context.Context) error {
	return checkStore(ctx, b.store)
}

func checkStore(ctx context.Context, store Store) error {
	if s, ok := store.(goZeroStore); ok {
		return s.id.check(ctx, s.r)
	}
	return nil
}

// options are the backend's options, then lo's expiry (with no tolerance
// added) and name. They are set on the options directly, not appended as
// Options, so a request's lock costs no closures.
func (b storeBackend) options(lo zerolock.LockerOptions) options {
	o := defaultOptions()
	for _, opt := range b.opts {
		opt(&o)
	}
	o.expiry, o.tolerance = lo.Expiry, 0
	if lo.Name != "" {
		o.name = lo.Name
	}
	return o
}

// NewSemaphore returns a Semaphore of permits on key in the backend's
// store, for the middleware's and the interceptor's limit mode. The
// backend's options apply first (WithoutWakeups only when they include
// it), then o's expiry, with no tolerance added, and its name. It returns
// ErrInvalidPermits for permits < 1, and an error wrapping
// ErrOptionNotApplicable when the backend's options include one that a
// Semaphore refuses.
func (b storeBackend) NewSemaphore(key string, permits int, o zerolock.LockerOptions) (zerolock.Locker, error) {
	s, err := newSemaphore(b.store, key, permits, b.options(o))
	if err != nil {
		return nil, err // not a nil *Semaphore in a non-nil Locker
	}
	return s, nil
}

// NewRedLockBackend returns the zerolock.Backend of RedLocks over independent
// masters. Its locks are not TTLers, Watchers or Fencers: Retry-After is the
// rule's expiry, and the middleware and interceptor refuse Renew and Fence
// with it. An option a RedLock refuses (see Option) makes every acquire of
// its locks fail.
func NewRedLockBackend(stores []Store, opts ...Option) zerolock.Backend {
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

// Check is a store backend's Check on every master, all at once, so that
// one master that hangs until ctx ends cannot hide another's
// misconfiguration: a misconfigured master is refused; otherwise the first
// master that cannot be reached now returns its error.
func (b redLockBackend) Check(ctx context.Context) error {
	errs := make([]error, len(b.stores))
	var wg sync.WaitGroup
	for i, store := range b.stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = checkStore(ctx, store)
		}()
	}
	wg.Wait()
	var unreachable error
	for _, err := range errs {
		if errors.Is(err, zerolock.ErrMisconfigured) {
			return err
		}
		if unreachable == nil {
			unreachable = err
		}
	}
	return unreachable
}

func (b redLockBackend) NewLocker(key string, lo zerolock.LockerOptions) zerolock.Locker {
	o := defaultOptions()
	o.expiry, o.tolerance = lo.Expiry, 0
	for _, opt := range b.opts {
		opt(&o)
	}
	if lo.Name != "" {
		o.name = lo.Name
	}
	return newRedLock(b.stores, key, o)
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
	_ zerolock.Checker          = storeBackend{}
	_ zerolock.Checker          = redLockBackend{}
)
