package redislock

import (
	"context"
	"errors"
	"sync"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/deadline"
)

// NewBackend returns the zerolock.Backend of RedisLocks in one store, for the
// middleware's and the interceptor's WithBackend constructors. opts apply
// to every lock it makes (WithDeadlineGuard, say), before the expiry,
// fencing and name that the zerolock.LockerOptions set (a name given
// WithName stays when LockerOptions.Name is empty). An option a RedisLock
// refuses (see Option) is refused by Check, which the middleware and the
// interceptor run at start-up, and by every acquire of the backend's locks;
// one that only a Semaphore refuses (WithReplicaAcks) makes its
// NewSemaphore fail. WithFencing fences the RedisLocks, and the
// semaphores, whose holders no token could order, go without it. A lock
// made with LockerOptions.Waited announces its releases and stored records
// to waiters even WithoutWakeups (replay mode's Wait needs that). Its
// locks are zerolock.RecordWaiters, and it is a zerolock.RateBackend (see
// Rate), whose counts honour WithDeadlineGuard and no other option.
func NewBackend(store Store, opts ...Option) zerolock.Backend {
	b := storeBackend{conn: conn.Wrap(store), setGet: new(setGetSupport), base: applyOptions(opts)}
	o := b.options(zerolock.LockerOptions{})
	b.refused = o.refuse(mutexRefuses, "the RedisLocks of a backend", "", nil)
	b.rateGuard = b.conn.Guard(o.deadlineGuard)
	if !o.fencing {
		b.more = moreFor(&b.conn, "", &o)
	}
	return b
}

type storeBackend struct {
	conn      conn.Conn // the store, probed once for all its locks
	setGet    *setGetSupport
	base      options        // the backend's options, applied once
	refused   error          // what every RedisLock of the backend refuses, or nil
	rateGuard deadline.Guard // WithDeadlineGuard, for Rate
	more      *lockMore      // its locks' without fencing, nil WithFencing
}

func (b storeBackend) NewLocker(key string, lo zerolock.LockerOptions) zerolock.Locker {
	o := b.options(lo)
	o.setGet = b.setGet
	o.fencing = o.fencing || lo.Fencing
	if lo.Waited {
		o.quietRelease = false // its releases and records wake waiters
	}
	if o.quietRelease == b.base.quietRelease {
		o.more = b.more // nil WithFencing, or ignored for lo.Fencing
	}
	return recordingLock{newObservedLock(b.conn, key, &o)}
}

// Check refuses an option that the backend's RedisLocks refuse (wrapping
// ErrOptionNotApplicable and zerolock.ErrMisconfigured), and a go-zero
// store whose server rejects the CLIENT SETINFO that the store sends on
// every new connection, with an error wrapping ErrIdentityRejected (and
// zerolock.ErrMisconfigured) that names the fix, DisableIdentity: true.
// The locks themselves do not refuse that store: they work and log the
// hazard once per address (see GoZeroStore). A server that cannot be
// reached now returns its error, and the next Check asks again. Other
// stores have nothing to check.
func (b storeBackend) Check(ctx context.Context) error {
	if b.refused != nil {
		return b.refused
	}
	return b.conn.Check(ctx)
}

// options are the backend's options, then lo's expiry (with no tolerance
// added) and name. They are set on a copy of the options applied once,
// not appended as Options, so a request's lock costs no closures and no
// allocation.
func (b storeBackend) options(lo zerolock.LockerOptions) options {
	o := b.base
	o.expiry, o.tolerance = lo.Expiry, 0
	if lo.Name != "" {
		o.name = lo.Name
	}
	return o
}

// NewSemaphore returns a Semaphore of permits on key in the backend's
// store, for the middleware's and the interceptor's limit mode. The
// backend's options apply first (WithoutWakeups only when they include
// it), then o's expiry, with no tolerance added, and its name; the
// backend's WithFencing is not a Semaphore's. It returns ErrInvalidPermits
// for permits < 1, and an error wrapping ErrOptionNotApplicable when the
// backend's options include another that a Semaphore refuses.
func (b storeBackend) NewSemaphore(key string, permits int, o zerolock.LockerOptions) (zerolock.Locker, error) {
	so := b.options(o)
	// The backend's WithFencing is for its RedisLocks.
	so.fencing, so.given = false, so.given&^optFencing
	s, err := newSemaphore(b.conn, key, permits, so)
	if err != nil {
		return nil, err // not a nil *Semaphore in a non-nil Locker
	}
	return s, nil
}

// NewRedLockBackend returns the zerolock.Backend of RedLocks over independent
// masters. Its locks are not TTLers, Watchers, Fencers or Recorders:
// Retry-After is the rule's expiry, and the middleware and interceptor
// refuse renewal (unless DisableRenew), Fence and replay mode with it. An option a RedLock refuses (see Option) is refused by Check,
// which the middleware and the interceptor run at start-up, and by every
// acquire of its locks.
func NewRedLockBackend(stores []Store, opts ...Option) zerolock.Backend {
	// One memory of SET NX GET refusals for all nodes: a node older than
	// Redis 7.0 sends every node's fresh acquire to the script, which is
	// always correct.
	opts = append(opts[:len(opts):len(opts)], sharedSetGet(new(setGetSupport)))
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return redLockBackend{stores: stores, opts: opts, refused: o.refuse(redLockRefuses, "the RedLocks of a backend", "", nil)}
}

type redLockBackend struct {
	stores  []Store
	opts    []Option
	refused error // what every RedLock of the backend refuses, or nil
}

// Check refuses an option the backend's RedLocks refuse; then it is a store
// backend's Check on every master, all at once, so that
// one master that hangs until ctx ends cannot hide another's
// misconfiguration: a misconfigured master is refused; otherwise the first
// master that cannot be reached now returns its error.
func (b redLockBackend) Check(ctx context.Context) error {
	if b.refused != nil {
		return b.refused
	}
	errs := make([]error, len(b.stores))
	var wg sync.WaitGroup
	for i, store := range b.stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := conn.Wrap(store)
			errs[i] = c.Check(ctx)
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
	_ zerolock.RateBackend      = storeBackend{}
	_ zerolock.Checker          = storeBackend{}
	_ zerolock.Checker          = redLockBackend{}
)
