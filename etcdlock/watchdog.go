package etcdlock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/observe/lockobs"
)

// watchdog keeps one hold's lease alive until stopped.
type watchdog struct {
	parent context.Context // Watch's context
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	obs    lockobs.Watch
}

// end cancels the watchdog with cause and reports whether this cancel
// ended it, rather than Release or the end of Watch's context before it.
func (dog *watchdog) end(cause error) bool {
	dog.cancel(cause)
	return context.Cause(dog.ctx) == cause
}

// lose ends the watchdog on the loss of its hold, and reports the loss
// unless the watchdog had already ended.
func (dog *watchdog) lose(cause error, why lockobs.Cause) {
	if dog.end(cause) {
		dog.obs.Lost(why)
	}
}

// stoppedByOwner reports whether Release or the end of Watch's context
// stopped the watchdog.
func (dog *watchdog) stoppedByOwner() bool {
	return dog.parent.Err() != nil || errors.Is(context.Cause(dog.ctx), zerolock.ErrReleased)
}

// Watch keeps the held lock's lease alive while work runs, and returns a
// context derived from ctx for that work. It honours zerolock's
// RenewEvery (default: a third of the lease TTL) and MaxHold options.
//
// The context is cancelled, with context.Cause telling why, when:
//   - the lock is lost: etcd says the lease is gone (revoked, or expired),
//     or the lock's key was deleted (zerolock.ErrLockLost);
//   - refreshes of the lease have failed for long enough that it may have
//     expired, decided on the monotonic clock from when the last successful
//     grant or refresh was sent, less a tenth of the TTL as margin
//     (zerolock.ErrRenewFailed), so before etcd could expire it;
//   - MaxHold has passed (zerolock.ErrMaxHold): refreshes stop, and the
//     lease expires within its TTL unless released first;
//   - Release is called (zerolock.ErrReleased);
//   - ctx ends (its own cause).
//
// In every case the refreshing goroutine stops; Release waits for it. Call
// Watch after a successful acquire; watching again returns the context of
// the running watchdog.
//
// Refreshes, failed refreshes and the loss are reported to package
// observe, the loss by cause: lockobs.Deleted for a lease or key gone (a
// lock's key is its lease's own, so no other holder can take it over),
// lockobs.RenewFailed and lockobs.MaxHold; failures and the loss are also
// events on ctx's span.
func (l *Lock) Watch(ctx context.Context, opts ...zerolock.WatchOption) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dog != nil {
		select {
		case <-l.dog.done:
		default:
			return l.dog.ctx
		}
	}
	h := l.held
	if h == nil {
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(fmt.Errorf("%w: Watch of a lock that is not held", zerolock.ErrLockLost))
		return ctx
	}
	settings := zerolock.ApplyWatchOptions(opts...)
	every := settings.RenewEvery
	if every <= 0 || every >= h.ttl-h.ttl/10 {
		every = h.ttl / 3 // a refresh must come well before the lease ends
	}
	lockCtx, cancel := context.WithCancelCause(ctx)
	dog := &watchdog{parent: ctx, ctx: lockCtx, cancel: cancel, done: make(chan struct{}), obs: l.obs.StartWatch(ctx)}
	l.dog = dog
	go l.keepAlive(dog, h, every, settings.MaxHold)
	return lockCtx
}

// stopWatchdog cancels the running watchdog with cause and waits for its
// goroutine to end, but no longer than ctx allows.
func (l *Lock) stopWatchdog(ctx context.Context, cause error) {
	l.mu.Lock()
	dog := l.dog
	l.dog = nil
	l.mu.Unlock()
	if dog != nil {
		dog.cancel(cause)
		select {
		case <-dog.done:
		case <-ctx.Done():
		}
	}
}

// keepAlive refreshes h's lease every so often and watches h's key for its
// deletion, until dog is cancelled.
func (l *Lock) keepAlive(dog *watchdog, h *hold, every, maxHold time.Duration) {
	defer close(dog.done)
	margin := h.ttl / 10
	validUntil := h.renewed.Add(h.ttl - margin)
	// The expiry signal has its own timer, so it fires on time even while
	// a refresh is stuck on a hung server. Its loss is reported here,
	// before done closes, so that it is counted once Release returns.
	var expired atomic.Bool
	expiry := time.AfterFunc(time.Until(validUntil), func() {
		expired.Store(true)
		dog.cancel(zerolock.ErrRenewFailed)
	})
	defer expiry.Stop()
	defer func() {
		if expired.Load() && context.Cause(dog.ctx) == zerolock.ErrRenewFailed {
			dog.obs.Lost(lockobs.RenewFailed)
		}
	}()
	var maxHoldC <-chan time.Time
	if maxHold > 0 {
		t := time.NewTimer(maxHold)
		defer t.Stop()
		maxHoldC = t.C
	}
	watchCtx, stopWatch := context.WithCancel(clientv3.WithRequireLeader(dog.ctx))
	defer stopWatch()
	// From the revision after the key's creation, so a deletion before
	// Watch is seen too.
	events := l.client.Watch(watchCtx, h.key, clientv3.WithRev(h.rev+1))
	// The first refresh is at once: it tells a lease lost before Watch
	// without waiting a third of the TTL.
	next := time.NewTimer(0)
	defer next.Stop()

	for {
		select {
		case <-dog.ctx.Done():
			return
		case <-maxHoldC:
			dog.lose(zerolock.ErrMaxHold, lockobs.MaxHold)
			return
		case resp, ok := <-events:
			if deleted(resp) {
				dog.lose(zerolock.ErrLockLost, lockobs.Deleted)
				return
			}
			if !ok || resp.Err() != nil {
				// Compacted past our revision, no leader, or the stream
				// broke: look at the key again on the next refresh.
				events = nil
			}
			continue
		case <-next.C:
		}
		sent := time.Now()
		// A refresh may take at most until the lease's validity ends.
		ctx, cancel := context.WithDeadline(dog.ctx, validUntil)
		resp, err := l.client.KeepAliveOnce(ctx, h.lease)
		if err == nil && events == nil {
			events, err = l.rewatch(ctx, watchCtx, h)
		}
		cancel()
		gone := errors.Is(err, rpctypes.ErrLeaseNotFound) || errors.Is(err, errKeyGone)
		if err != nil && !gone && !dog.stoppedByOwner() {
			// Also when the expiry ended the watchdog meanwhile: this
			// refresh then failed to come in time.
			dog.obs.RenewFailed(err)
		}
		switch {
		case dog.ctx.Err() != nil:
			return
		case gone:
			dog.lose(zerolock.ErrLockLost, lockobs.Deleted)
			return
		case err != nil:
			// Try again next tick; the expiry timer guards the rest.
		default:
			dog.obs.Renewed()
			validUntil = sent.Add(time.Duration(resp.TTL)*time.Second - margin)
			expiry.Reset(time.Until(validUntil))
		}
		next.Reset(every)
	}
}

// errKeyGone tells keepAlive that the hold's key no longer exists.
var errKeyGone = errors.New("etcdlock: the lock's key is gone")

// rewatch checks that h's key is still there and watches it again, on
// watchCtx, from the revision it was read at; it returns errKeyGone when
// the key is not.
func (l *Lock) rewatch(ctx, watchCtx context.Context, h *hold) (clientv3.WatchChan, error) {
	resp, err := l.client.Get(ctx, h.key)
	switch {
	case err != nil:
		return nil, err
	case len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != h.rev:
		return nil, errKeyGone
	}
	return l.client.Watch(watchCtx, h.key, clientv3.WithRev(resp.Header.Revision+1)), nil
}

// deleted reports whether a watch response carries the key's deletion.
func deleted(resp clientv3.WatchResponse) bool {
	for _, ev := range resp.Events {
		if ev.Type == mvccpb.DELETE {
			return true
		}
	}
	return false
}
