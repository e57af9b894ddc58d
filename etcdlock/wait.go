package etcdlock

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/zerolock/zerolock/observe/lockobs"
)

// AcquireWait is AcquireWaitCtx with context.Background().
func (l *Lock) AcquireWait(wait time.Duration) (bool, error) {
	return l.AcquireWaitCtx(context.Background(), wait)
}

// AcquireWaitCtx waits up to wait (no limit when wait <= 0, then only ctx
// bounds it) for the lock and returns true as soon as it holds it. It
// returns false, with a nil error, when the wait limit passed first; an
// error for which errors.Is(err, ctx.Err()) holds when ctx ended first;
// ErrInvalidExpiry for a negative expiry; and a wrapped etcd error when
// etcd fails.
//
// Waiters queue in etcd's revision order, with the concurrency Mutex's
// Lock: each writes its key under the lock's prefix on its own lease, kept
// alive while it waits, and watches only the key created just before its
// own, so a release wakes one waiter and waiters get the lock first come,
// first served. A waiter that gives up deletes its key and revokes its
// lease, so it never blocks those behind it; when etcd does not answer, it
// still returns, within about two TTLs, and its key goes with the lease
// nobody keeps alive any more.
//
// Once it holds the lock, the lease is refreshed once and no longer kept
// alive: the lock expires its TTL after the acquire unless it is released
// first or Watch keeps it.
func (l *Lock) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	ctx, a := l.obs.StartAcquire(ctx, true)
	ok, err := l.acquireWait(ctx, wait)
	a.EndWait(ctx, ok, err, l.fenceIf(ok), lockobs.WaitErrors{})
	return ok, err
}

// acquireWait is AcquireWaitCtx without its observation.
func (l *Lock) acquireWait(ctx context.Context, wait time.Duration) (bool, error) {
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

	waitCtx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	view, stop := cleanupBounded(l.client, ctx, waitCtx, time.Duration(ttl)*time.Second)
	defer stop()
	s, err := concurrency.NewSession(view, concurrency.WithTTL(ttl), concurrency.WithContext(waitCtx))
	if err != nil {
		return l.gaveUp(ctx, waitCtx, err)
	}
	m := concurrency.NewMutex(s, l.key)
	if err := m.Lock(waitCtx); err != nil {
		l.abandon(ctx, s)
		return l.gaveUp(ctx, waitCtx, err)
	}
	s.Orphan()
	// The keep-alives of the wait may have last renewed the lease up to a
	// third of its TTL ago: one more makes the lock live its TTL from now.
	sent := time.Now()
	if _, err := l.client.KeepAliveOnce(ctx, s.Lease()); err != nil {
		l.abandon(ctx, s)
		return false, l.wrap(ctx, "acquire", err)
	}
	l.setHeld(s, m, ttl, sent)
	return true, nil
}

// gaveUp is the answer of a wait that ended without the lock: an error
// when ctx ended or etcd failed, and false, nil when only the wait limit
// passed.
func (l *Lock) gaveUp(ctx, waitCtx context.Context, err error) (bool, error) {
	if ctx.Err() == nil && waitCtx.Err() != nil {
		return false, nil
	}
	return false, l.wrap(ctx, "acquire", err)
}

// cleanupBounded returns a view of client, for the Mutex, whose Ctx ends
// grace after waitCtx does. A Mutex whose Lock gives up deletes its queue
// key on the client's Ctx, which on a real client lasts until Close: while
// etcd hangs, a waiter that gave up would hang with it. With the view it
// returns, and the lease it no longer keeps alive takes its key away
// within the TTL. stop releases what the view holds.
func cleanupBounded(client *clientv3.Client, ctx, waitCtx context.Context, grace time.Duration) (view *clientv3.Client, stop func()) {
	cleanup, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unregister := context.AfterFunc(waitCtx, func() { time.AfterFunc(grace, cancel) })
	view = clientv3.NewCtxClient(cleanup)
	view.Cluster, view.KV, view.Lease = client.Cluster, client.KV, client.Lease
	view.Watcher, view.Auth, view.Maintenance = client.Watcher, client.Auth, client.Maintenance
	return view, func() {
		unregister()
		cancel()
	}
}
