package zklock

import (
	"context"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zerolock/zerolock/observe/lockobs"
)

// AcquireWait is AcquireWaitCtx with context.Background().
func (l *Lock) AcquireWait(wait time.Duration) (bool, error) {
	return l.AcquireWaitCtx(context.Background(), wait)
}

// AcquireWaitCtx queues for the lock and waits up to wait (no limit when
// wait <= 0, then only ctx bounds it), returning true as soon as it holds
// it. Waiters are served in the order their nodes were created: each
// watches only the node just before its own, so a release wakes one
// waiter, not all of them. A waiter that gives up deletes its node.
//
// It returns false, with a nil error, when the wait limit passed first; an
// error for which errors.Is(err, ctx.Err()) holds when ctx ended first;
// ErrInvalidExpiry when the expiry is not positive; ErrNodeLost when its
// node vanished while it waited (its session expired, or another client
// deleted it); and an error wrapping ErrZooKeeper when ZooKeeper fails.
func (l *Lock) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	ctx, a := l.obs.StartAcquire(ctx, true)
	ok, err := l.acquireWait(ctx, wait)
	a.EndWait(ctx, ok, err, l.fenceIf(ok), waitErrors)
	return ok, err
}

// waitErrors are this package's errors that a waiting acquire's outcome
// reads: ZooKeeper failing is an error, even when the caller's deadline
// passed meanwhile.
var waitErrors = lockobs.WaitErrors{Failed: ErrZooKeeper}

// acquireWait is AcquireWaitCtx without its observation.
func (l *Lock) acquireWait(ctx context.Context, wait time.Duration) (bool, error) {
	if l.o.expiry <= 0 {
		return false, l.wrap(ctx, "acquire", ErrInvalidExpiry)
	}
	waitCtx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	// gaveUp turns an error into the answer: false, nil when only the
	// wait limit ended.
	gaveUp := func(err error) (bool, error) {
		if waitCtx.Err() != nil && ctx.Err() == nil {
			return false, nil
		}
		return false, l.wrap(ctx, "acquire", err)
	}
	if err := l.enter(waitCtx); err != nil {
		return gaveUp(err)
	}
	defer l.leave()
	if held, err := l.stillHeld(waitCtx); err != nil || held {
		if err != nil {
			return gaveUp(err)
		}
		return true, nil
	}
	node, session, err := l.create(waitCtx)
	if err != nil {
		return gaveUp(err)
	}
	for {
		pred, seq, err := l.position(waitCtx, node)
		if err != nil {
			l.discard(node, session)
			return gaveUp(err)
		}
		if pred == "" {
			l.hold(node, session, seq)
			return true, nil
		}
		deleted, err := l.watchNode(waitCtx, pred)
		if err != nil {
			l.discard(node, session)
			return gaveUp(err)
		}
		select {
		case <-deleted:
			// The predecessor left (released, gave up, or its session
			// ended), or the watch broke: look at the queue again.
		case <-waitCtx.Done():
			l.discard(node, session)
			return gaveUp(waitCtx.Err())
		}
	}
}

// watchNode sets a watch on node and returns a channel that fires when the
// watch does, or a closed one when node is already gone.
func (l *Lock) watchNode(ctx context.Context, node string) (<-chan zk.Event, error) {
	return call(ctx, func() (<-chan zk.Event, error) {
		exists, _, events, err := l.conn.ExistsW(node)
		if err != nil {
			return nil, err
		}
		if !exists {
			gone := make(chan zk.Event)
			close(gone)
			return gone, nil
		}
		return events, nil
	}, nil)
}
