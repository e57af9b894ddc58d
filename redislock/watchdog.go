package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/zerolock/zerolock"
)

// watchdog renews one held lock until stopped.
type watchdog struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// Watch keeps the held lock alive while work runs, renewing it with the same
// token through a compare-and-pexpire (a key that vanished is never
// re-created), and returns a context derived from ctx for that work.
//
// The context is cancelled, with context.Cause telling why, when:
//   - the lock is lost: the key is gone or holds another token
//     (zerolock.ErrLockLost);
//   - renewals have failed for long enough that the lock may have expired,
//     decided on the monotonic clock from when the last successful acquire
//     or renewal was sent, less a tenth of the expiry as margin for drift
//     (zerolock.ErrRenewFailed), so before Redis could expire it, not after;
//   - zerolock.MaxHold has passed (zerolock.ErrMaxHold);
//   - Release is called (zerolock.ErrReleased);
//   - ctx ends (its own cause).
//
// In every case the renewing goroutine stops; Release waits for it. Call
// Watch after a successful acquire; watching again returns the context of
// the running watchdog.
func (rl *RedisLock) Watch(ctx context.Context, opts ...zerolock.WatchOption) context.Context {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.dog != nil {
		select {
		case <-rl.dog.done:
		default:
			return rl.dog.ctx
		}
	}
	px, err := rl.px()
	if err == nil && rl.acquiredAt.IsZero() {
		err = fmt.Errorf("%w: Watch of a lock that is not held", zerolock.ErrLockLost)
	}
	if err != nil {
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(err)
		return ctx
	}
	o := zerolock.ApplyWatchOptions(opts...)
	if o.RenewEvery <= 0 || o.RenewEvery >= px-px/10 {
		o.RenewEvery = px / 3 // a renewal must come well before the validity ends
	}
	lockCtx, cancel := context.WithCancelCause(ctx)
	dog := &watchdog{ctx: lockCtx, cancel: cancel, done: make(chan struct{})}
	rl.dog = dog
	go rl.renew(dog, o, rl.acquiredAt, px)
	return lockCtx
}

// stopWatchdog cancels the running watchdog with cause and waits for its
// goroutine to end, but no longer than ctx allows: a renewal stuck on a
// hung server ends by itself within the client's read timeout.
func (rl *RedisLock) stopWatchdog(ctx context.Context, cause error) {
	rl.mu.Lock()
	dog := rl.dog
	rl.dog = nil
	rl.mu.Unlock()
	if dog != nil {
		dog.cancel(cause)
		select {
		case <-dog.done:
		case <-ctx.Done():
		}
	}
}

func (rl *RedisLock) renew(dog *watchdog, o zerolock.WatchSettings, acquired time.Time, px time.Duration) {
	defer close(dog.done)
	margin := px / 10
	validUntil := acquired.Add(px - margin)
	// The expiry signal has its own timer, so it fires on time even while a
	// renewal is stuck on a hung server (go-redis reads past a context's
	// deadline unless ContextTimeoutEnabled is set).
	expiry := time.AfterFunc(time.Until(validUntil), func() { dog.cancel(zerolock.ErrRenewFailed) })
	defer expiry.Stop()
	var maxHold <-chan time.Time
	if o.MaxHold > 0 {
		t := time.NewTimer(o.MaxHold)
		defer t.Stop()
		maxHold = t.C
	}
	// The first renewal is at once: it tells a lock lost before Watch
	// without waiting a third of the expiry.
	next := time.NewTimer(0)
	defer next.Stop()

	for {
		select {
		case <-dog.ctx.Done():
			return
		case <-maxHold:
			dog.cancel(zerolock.ErrMaxHold)
			return
		case <-next.C:
		}
		sent := time.Now()
		// A renewal may take at most until the lock's validity ends.
		ctx, cancel := context.WithDeadline(dog.ctx, validUntil)
		reply, err := renewScript.run(ctx, rl.store, rl.keys, rl.token, px.Milliseconds()).Int64()
		cancel()
		switch {
		case dog.ctx.Err() != nil:
			return
		case err != nil:
			// Try again next tick; the expiry timer guards the rest.
		case reply != 1:
			dog.cancel(zerolock.ErrLockLost)
			return
		default:
			validUntil = sent.Add(px - margin)
			expiry.Reset(time.Until(validUntil))
		}
		next.Reset(o.RenewEvery)
	}
}
