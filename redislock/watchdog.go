package redislock

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/zerolock/zerolock"
)

// A keeper is the watchdog bookkeeping of one hold: when the latest
// successful acquire (or renewal) was sent and the running watchdog. Every
// primitive of the package embeds one and tells it how to renew.
type keeper struct {
	mu         sync.Mutex
	acquiredAt time.Time // when the latest successful acquire was sent
	dog        *watchdog
}

// renewFunc renews a hold for px once: 1 when renewed, 0 when the hold is
// lost (the key or share is gone or another's), or an error.
type renewFunc func(ctx context.Context, px time.Duration) (int64, error)

// watchdog renews one held lock until stopped.
type watchdog struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// noteAcquired records when the acquire that succeeded was sent: the
// watchdog counts the hold's validity from there.
func (k *keeper) noteAcquired(sent time.Time) {
	k.mu.Lock()
	if sent.After(k.acquiredAt) {
		k.acquiredAt = sent
	}
	k.mu.Unlock()
}

// forget records that the hold ended: a later Watch needs a new acquire.
func (k *keeper) forget() {
	k.mu.Lock()
	k.acquiredAt = time.Time{}
	k.mu.Unlock()
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
	px, err := rl.px()
	return rl.watch(ctx, px, err, func(ctx context.Context, px time.Duration) (int64, error) {
		return renewScript.run(ctx, rl.store, rl.keys, rl.token, px.Milliseconds()).Int64()
	}, opts)
}

// watch starts the watchdog of a hold of px (or refuses with err, the
// expiry's error), renewing with renew; see RedisLock.Watch.
func (k *keeper) watch(ctx context.Context, px time.Duration, err error, renew renewFunc, opts []zerolock.WatchOption) context.Context {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.dog != nil {
		select {
		case <-k.dog.done:
		default:
			return k.dog.ctx
		}
	}
	if err == nil && k.acquiredAt.IsZero() {
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
	k.dog = dog
	go dog.run(renew, o, k.acquiredAt, px)
	return lockCtx
}

// stopWatchdog cancels the running watchdog with cause and waits for its
// goroutine to end, but no longer than ctx allows: a renewal stuck on a
// hung server ends by itself within the client's read timeout.
func (k *keeper) stopWatchdog(ctx context.Context, cause error) {
	k.mu.Lock()
	dog := k.dog
	k.dog = nil
	k.mu.Unlock()
	if dog != nil {
		dog.cancel(cause)
		select {
		case <-dog.done:
		case <-ctx.Done():
		}
	}
}

func (dog *watchdog) run(renew renewFunc, o zerolock.WatchSettings, acquired time.Time, px time.Duration) {
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
		reply, err := renew(ctx, px)
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
