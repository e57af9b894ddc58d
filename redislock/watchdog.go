package redislock

import (
	"context"
	"fmt"
	"time"
)

// A WatchOption tunes Watch.
type WatchOption func(*watchOptions)

type watchOptions struct {
	every   time.Duration
	maxHold time.Duration
}

// RenewEvery sets how often the watchdog renews; the default is a third of
// the expiry sent to Redis, so two renewals in a row may fail before the
// lock is at risk.
func RenewEvery(d time.Duration) WatchOption {
	return func(o *watchOptions) {
		o.every = d
	}
}

// MaxHold bounds how long the watchdog keeps the lock alive: after d it
// stops renewing and cancels the context with ErrMaxHold, so a stuck task
// cannot hold a resource forever. The default is no bound.
func MaxHold(d time.Duration) WatchOption {
	return func(o *watchOptions) {
		o.maxHold = d
	}
}

// WatchSettings are what a list of WatchOptions sets, for Lockers on other
// lock services that implement Watch; zero means unset.
type WatchSettings struct {
	// RenewEvery is the renewal interval RenewEvery set.
	RenewEvery time.Duration
	// MaxHold is the bound MaxHold set.
	MaxHold time.Duration
}

// ApplyWatchOptions returns the settings opts make.
func ApplyWatchOptions(opts ...WatchOption) WatchSettings {
	var o watchOptions
	for _, opt := range opts {
		opt(&o)
	}
	return WatchSettings{RenewEvery: o.every, MaxHold: o.maxHold}
}

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
//   - the lock is lost: the key is gone or holds another token (ErrLockLost);
//   - renewals have failed for long enough that the lock may have expired,
//     decided on the monotonic clock from when the last successful acquire
//     or renewal was sent, less a tenth of the expiry as margin for drift
//     (ErrRenewFailed), so before Redis could expire it, not after;
//   - MaxHold has passed (ErrMaxHold);
//   - Release is called (ErrReleased);
//   - ctx ends (its own cause).
//
// In every case the renewing goroutine stops; Release waits for it. Call
// Watch after a successful acquire; watching again returns the context of
// the running watchdog.
func (rl *RedisLock) Watch(ctx context.Context, opts ...WatchOption) context.Context {
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
		err = fmt.Errorf("%w: Watch of a lock that is not held", ErrLockLost)
	}
	if err != nil {
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(err)
		return ctx
	}
	o := watchOptions{every: px / 3}
	for _, opt := range opts {
		opt(&o)
	}
	if o.every <= 0 || o.every >= px-px/10 {
		o.every = px / 3 // a renewal must come well before the validity ends
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

func (rl *RedisLock) renew(dog *watchdog, o watchOptions, acquired time.Time, px time.Duration) {
	defer close(dog.done)
	margin := px / 10
	validUntil := acquired.Add(px - margin)
	// The expiry signal has its own timer, so it fires on time even while a
	// renewal is stuck on a hung server (go-redis reads past a context's
	// deadline unless ContextTimeoutEnabled is set).
	expiry := time.AfterFunc(time.Until(validUntil), func() { dog.cancel(ErrRenewFailed) })
	defer expiry.Stop()
	var maxHold <-chan time.Time
	if o.maxHold > 0 {
		t := time.NewTimer(o.maxHold)
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
			dog.cancel(ErrMaxHold)
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
			dog.cancel(ErrLockLost)
			return
		default:
			validUntil = sent.Add(px - margin)
			expiry.Reset(time.Until(validUntil))
		}
		next.Reset(o.every)
	}
}
