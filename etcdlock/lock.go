package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/observe/lockobs"
)

// A Lock is a lock on one key in etcd, built on the concurrency package's
// Mutex: each acquisition takes a lease of its own and writes a key under
// the lock's prefix, and the key created first holds the lock.
//
// It is safe for concurrent use; acquires and releases on one Lock run one
// at a time, and acquiring again while holding refreshes the lease.
type Lock struct {
	client *clientv3.Client
	key    string // the Mutex's prefix in etcd
	expiry time.Duration
	obs    *lockobs.Instruments

	op sync.Mutex // serializes acquires and releases

	mu   sync.Mutex
	held *hold // nil when not held
	dog  *watchdog

	fence atomic.Int64 // create revision of the latest hold
}

// hold is one acquisition.
type hold struct {
	lease clientv3.LeaseID
	key   string // the holder's key: <lock key>/<lease ID in hex>
	rev   int64  // its create revision
	ttl   time.Duration
	since time.Time // when the lock was taken, for its hold time
	// renewed is when the latest grant or refresh of the lease was sent:
	// etcd keeps the lease at least ttl from then.
	renewed time.Time
}

// New returns a lock on key through client. Its expiry is 0 (a one-second
// lease) unless WithExpiry says otherwise. It reports its acquires, holds,
// renewals and losses to package observe under the name WithName gives.
func New(client *clientv3.Client, key string, opts ...Option) *Lock {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return &Lock{client: client, key: o.prefix + key, expiry: o.expiry, obs: lockobs.For("etcd", "mutex", o.name)}
}

// Key returns the lock's prefix in etcd, under which holders and waiters
// write their keys.
func (l *Lock) Key() string {
	return l.key
}

// Acquire is AcquireCtx with context.Background().
func (l *Lock) Acquire() (bool, error) {
	return l.AcquireCtx(context.Background())
}

// AcquireCtx tries once to take the lock, with the concurrency Mutex's
// TryLock on a new lease whose TTL is the expiry rounded up to whole
// seconds. It reports true when this Lock holds the lock afterwards (taken,
// or already held and its lease refreshed) and false, with a nil error,
// when another holder has it; a failed try revokes its lease at once.
//
// The lease is not kept alive: the lock expires after its TTL unless it is
// released first or Watch keeps it.
//
// It returns ErrInvalidExpiry for a negative expiry, and a wrapped etcd
// error when etcd cannot answer; errors.Is(err, ctx.Err()) holds when the
// context ended. After an error the lock is not held, or held by a lease
// nobody renews, which expires within its TTL.
func (l *Lock) AcquireCtx(ctx context.Context) (bool, error) {
	ctx, a := l.obs.StartAcquire(ctx, false)
	ok, err := l.tryAcquire(ctx)
	a.End(lockobs.TryOutcome(ok, err), l.fenceIf(ok), err)
	return ok, err
}

// tryAcquire is AcquireCtx without its observation.
func (l *Lock) tryAcquire(ctx context.Context) (bool, error) {
	ttl, err := leaseTTL(l.expiry)
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, l.wrap(ctx, "acquire", err)
	}
	l.op.Lock()
	defer l.op.Unlock()
	if ok, err := l.refresh(ctx); ok || err != nil {
		return ok, err
	}

	sent := time.Now()
	s, err := concurrency.NewSession(l.client, concurrency.WithTTL(ttl), concurrency.WithContext(ctx))
	if err != nil {
		return false, l.wrap(ctx, "acquire", err)
	}
	m := concurrency.NewMutex(s, l.key)
	if err := m.TryLock(ctx); err != nil {
		l.abandon(ctx, s)
		if errors.Is(err, concurrency.ErrLocked) {
			return false, nil
		}
		return false, l.wrap(ctx, "acquire", err)
	}
	s.Orphan() // the lock must expire by itself unless released or watched
	l.setHeld(s, m, ttl, sent)
	return true, nil
}

// refresh re-acquires a lock this Lock holds by refreshing its lease, as
// redislock's re-entrant acquire refreshes its expiry. It reports false,
// with a nil error, when there is nothing to refresh: not held, or the
// lease or key is gone, whose leftovers it clears for a fresh acquire.
func (l *Lock) refresh(ctx context.Context) (bool, error) {
	h := l.current()
	if h == nil {
		return false, nil
	}
	sent := time.Now()
	resp, err := l.client.KeepAliveOnce(ctx, h.lease)
	switch {
	case errors.Is(err, rpctypes.ErrLeaseNotFound):
		l.clearHeld(h)
		return false, nil
	case err != nil:
		return false, l.wrap(ctx, "acquire", err)
	}
	owner, err := l.client.Txn(ctx).If(isOwner(h)).Commit()
	if err != nil {
		return false, l.wrap(ctx, "acquire", err)
	}
	if !owner.Succeeded {
		// The key was deleted under a live lease: start afresh.
		l.revoke(ctx, h.lease, h.ttl)
		l.clearHeld(h)
		return false, nil
	}
	renewed := *h
	renewed.ttl, renewed.renewed = time.Duration(resp.TTL)*time.Second, sent
	l.mu.Lock()
	if l.held == h {
		l.held = &renewed
	}
	l.mu.Unlock()
	return true, nil
}

// abandon gives up a session that did not get the lock: it stops its
// keep-alives and revokes its lease, which deletes any key left under it,
// so that it never blocks others. A revoke that fails leaves the lease to
// expire within its TTL.
func (l *Lock) abandon(ctx context.Context, s *concurrency.Session) {
	s.Orphan()
	ttl, _ := leaseTTL(l.expiry)
	l.revoke(ctx, s.Lease(), time.Duration(ttl)*time.Second)
}

// revoke revokes lease, for at most ttl (after which it is expired anyway),
// even when ctx has ended.
func (l *Lock) revoke(ctx context.Context, lease clientv3.LeaseID, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
	defer cancel()
	_, _ = l.client.Revoke(ctx, lease)
}

func (l *Lock) setHeld(s *concurrency.Session, m *concurrency.Mutex, ttl int, renewed time.Time) {
	// The Mutex keeps its key's create revision to itself, except in the
	// comparison that tells whether it still owns the lock.
	owner := m.IsOwner()
	h := &hold{
		lease:   s.Lease(),
		key:     m.Key(),
		rev:     (*pb.Compare)(&owner).GetCreateRevision(),
		ttl:     time.Duration(ttl) * time.Second,
		renewed: renewed,
		since:   time.Now(),
	}
	l.mu.Lock()
	l.held = h
	l.mu.Unlock()
	l.fence.Store(h.rev)
}

func (l *Lock) current() *hold {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held
}

// clearHeld forgets h if it is still the current hold.
func (l *Lock) clearHeld(h *hold) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held == h {
		l.held = nil
	}
}

// isOwner compares the holder's key with the one h created.
func isOwner(h *hold) clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(h.key), "=", h.rev)
}

// Fence returns the fencing token of the lock's latest hold: the create
// revision of its key in etcd, which etcd's single revision counter makes
// greater than that of every key created before, so every later holder of
// the lock gets a greater token. It is 0 until the lock has been acquired.
func (l *Lock) Fence() int64 {
	return l.fence.Load()
}

// Release is ReleaseCtx with context.Background().
func (l *Lock) Release() (bool, error) {
	return l.ReleaseCtx(context.Background())
}

// ReleaseCtx stops the watchdog, deletes the lock's key if, and only if, it
// is still this hold's, and revokes the hold's lease. It reports false,
// with a nil error, when the lock was not held (never taken, expired, or
// its key deleted by someone else).
//
// It returns a wrapped etcd error when etcd cannot answer, and the hold
// stays for a later ReleaseCtx to settle; errors.Is(err, ctx.Err()) holds
// when the context ended. A revoke that fails after the key was deleted is
// not an error: the lease holds no key and expires within its TTL. Callers
// that release on the way out of a request should pass a context that is
// not already cancelled, such as context.WithoutCancel(ctx).
func (l *Lock) ReleaseCtx(ctx context.Context) (bool, error) {
	// The watchdog stops first, even when ctx has ended: a release that
	// cannot reach etcd must not leave it renewing.
	l.stopWatchdog(ctx, zerolock.ErrReleased)
	if err := ctx.Err(); err != nil {
		return false, l.wrap(ctx, "release", err)
	}
	l.op.Lock()
	defer l.op.Unlock()
	h := l.current()
	if h == nil {
		return false, nil
	}
	resp, err := l.client.Txn(ctx).If(isOwner(h)).Then(clientv3.OpDelete(h.key)).Commit()
	if err != nil {
		return false, l.wrap(ctx, "release", err)
	}
	// The lock is free once its key is deleted, before the revoke.
	if resp.Succeeded {
		l.obs.Held(time.Since(h.since))
	} else {
		l.obs.ReleasedGone()
	}
	l.revoke(ctx, h.lease, h.ttl)
	l.clearHeld(h)
	return resp.Succeeded, nil
}

// TTL reports how long the lease of the lock's current holder, whoever it
// is, has left to live as etcd sees it, and 0 when nobody holds the lock.
// etcd reports whole seconds rounded down, so TTL rounds up (the lease
// ends within that time, never after it), and a holder always has at
// least a second; it is never more than the lease's TTL. It returns
// ErrNoLease when the holder's key has no lease, and a wrapped etcd error
// when etcd cannot answer.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	resp, err := l.client.Get(ctx, l.key+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		return 0, l.wrap(ctx, "ttl", err)
	}
	if len(resp.Kvs) == 0 {
		return 0, nil
	}
	lease := clientv3.LeaseID(resp.Kvs[0].Lease)
	if lease == clientv3.NoLease {
		return 0, l.wrap(ctx, "ttl", ErrNoLease)
	}
	ttl, err := l.client.TimeToLive(ctx, lease)
	if err != nil {
		return 0, l.wrap(ctx, "ttl", err)
	}
	if ttl.TTL < 0 { // expired since the read: nobody holds it now
		return 0, nil
	}
	return time.Duration(min(ttl.TTL+1, max(ttl.GrantedTTL, 1))) * time.Second, nil
}

// fenceIf is the fencing token an acquire that answered ok reports.
func (l *Lock) fenceIf(ok bool) int64 {
	if !ok {
		return 0
	}
	return l.Fence()
}

// wrap names the operation and key, and makes errors.Is(err, ctx.Err())
// hold whenever the context has ended, whatever etcd returned.
func (l *Lock) wrap(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("etcdlock: %s %q: %w (%w)", op, l.key, err, ctxErr)
	}
	return fmt.Errorf("etcdlock: %s %q: %w", op, l.key, err)
}

var (
	_ zerolock.Locker = (*Lock)(nil)
	_ zerolock.Waiter = (*Lock)(nil)
)
