package zklock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/observe/lockobs"
)

// watchdog guards one watched hold until stopped.
type watchdog struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	obs    lockobs.Watch
}

// end cancels the watch with cause and reports whether this cancel ended
// it, rather than Release or the end of Watch's context before it.
func (dog *watchdog) end(cause error) bool {
	dog.cancel(cause)
	return context.Cause(dog.ctx) == cause
}

// Watch keeps the held lock from expiring while work runs and returns a
// context derived from ctx for that work. A ZooKeeper lock needs no
// renewal, its session keeps it, so Watch only stops the expiry timer and
// watches for the lock's loss; zerolock.RenewEvery is ignored.
//
// The context is cancelled, with context.Cause telling why, when:
//   - the lock is lost (zerolock.ErrLockLost, wrapped with the reason):
//     its node was deleted by another client, its session expired or was
//     closed, or the connection has been without its session for longer
//     than WithSessionTimeout allows (at once by default), since the
//     server may expire the session meanwhile;
//   - zerolock.MaxHold has passed (zerolock.ErrMaxHold);
//   - Release is called (zerolock.ErrReleased);
//   - ctx ends (its own cause).
//
// Unless Release ended it, the hold then falls back to its expiry timer,
// which deletes the node one expiry later, as a Redis lock whose watchdog
// stopped expires. Call Watch after a successful acquire; watching again
// returns the context of the running watch.
//
// The loss is reported to package observe, and as an event on ctx's span,
// by cause: lockobs.Deleted for a node deleted by another client (a node
// is its holder's own, so no other holder can take it over);
// lockobs.RenewFailed for the end of the session, or of the connection's
// hold on it, since the session's heartbeats are ZooKeeper's renewals;
// lockobs.MaxHold. A connection first seen without its session counts as
// a failed renewal.
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
	if l.node == "" {
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(fmt.Errorf("%w: Watch of a lock that is not held", zerolock.ErrLockLost))
		return ctx
	}
	settings := zerolock.ApplyWatchOptions(opts...)
	l.stopTimer()
	lockCtx, cancel := context.WithCancelCause(ctx)
	dog := &watchdog{ctx: lockCtx, cancel: cancel, done: make(chan struct{}), obs: l.obs.StartWatch(ctx)}
	l.dog = dog
	go l.guard(dog, l.node, l.session, l.gen, settings.MaxHold)
	return lockCtx
}

// stopWatchdog cancels the running watch with cause and waits for its
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

// graceAndPoll returns how long the connection may be without its session
// before Watch calls the lock lost, and how often Watch looks.
func (l *Lock) graceAndPoll() (grace, poll time.Duration) {
	if l.o.sessionTimeout <= 0 {
		return 0, 50 * time.Millisecond
	}
	grace = l.o.sessionTimeout / 3
	return grace, min(max(grace/5, 10*time.Millisecond), 100*time.Millisecond)
}

// guard watches hold gen's node until the lock is lost, MaxHold passes or
// the watch is stopped. The client tells of a deleted node and of an
// expired session through the node's watch, but not of a connection that
// is down, so guard also polls the connection's state.
func (l *Lock) guard(dog *watchdog, node string, session int64, gen uint64, maxHold time.Duration) {
	defer close(dog.done)
	defer l.unguard(dog, gen)
	lost := func(why lockobs.Cause, format string, args ...any) {
		if dog.end(fmt.Errorf("%w: "+format, append([]any{zerolock.ErrLockLost}, args...)...)) {
			dog.obs.Lost(why)
		}
	}
	// gone is why a node that is not there went: with the session, when
	// the connection now has another one.
	gone := func() lockobs.Cause {
		if l.conn.SessionID() != session {
			return lockobs.RenewFailed
		}
		return lockobs.Deleted
	}
	var holdLimit <-chan time.Time
	if maxHold > 0 {
		t := time.NewTimer(maxHold)
		defer t.Stop()
		holdLimit = t.C
	}
	grace, every := l.graceAndPoll()
	poll := time.NewTicker(every)
	defer poll.Stop()
	var (
		events  <-chan zk.Event
		offline time.Time // when the connection was first seen without its session
	)
	for {
		if events == nil {
			ch, err := call(dog.ctx, func() (<-chan zk.Event, error) {
				exists, _, ch, err := l.conn.ExistsW(node)
				if err == nil && !exists {
					ch = nil
				}
				return ch, err
			}, nil)
			switch {
			case dog.ctx.Err() != nil:
				return
			case err == nil && ch == nil:
				lost(gone(), "node %s is gone", node)
				return
			case err == nil:
				events = ch
			}
			// On an error the connection is down: the poll below decides,
			// and the watch is set again on the next tick.
		}
		select {
		case <-dog.ctx.Done():
			return
		case <-holdLimit:
			if dog.end(zerolock.ErrMaxHold) {
				dog.obs.Lost(lockobs.MaxHold)
			}
			return
		case ev := <-events:
			events = nil
			switch {
			case ev.Type == zk.EventNodeDeleted:
				lost(gone(), "node %s was deleted", node)
				return
			case ev.Type == zk.EventNotWatching && errors.Is(ev.Err, zk.ErrSessionExpired):
				lost(lockobs.RenewFailed, "session expired")
				return
			case ev.Type == zk.EventNotWatching:
				lost(lockobs.RenewFailed, "the connection was closed: %v", ev.Err)
				return
			}
			// Data or children changed: watch again.
		case <-poll.C:
			if id := l.conn.SessionID(); id != session {
				lost(lockobs.RenewFailed, "session %#x expired (now %#x)", session, id)
				return
			}
			state := l.conn.State()
			if state == zk.StateHasSession {
				offline = time.Time{}
				continue
			}
			if offline.IsZero() {
				offline = time.Now()
				dog.obs.RenewFailed(fmt.Errorf("zklock: connection %v, without its session", state))
			}
			if d := time.Since(offline); d >= grace {
				lost(lockobs.RenewFailed, "connection without its session for %v", d.Round(time.Millisecond))
				return
			}
		}
	}
}

// unguard hands a watch that ended by itself back to the expiry timer;
// after Release (which cleared l.dog first) it does nothing.
func (l *Lock) unguard(dog *watchdog, gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dog != dog {
		return
	}
	l.dog = nil
	if l.gen == gen && l.node != "" {
		l.armTimer()
	}
}
