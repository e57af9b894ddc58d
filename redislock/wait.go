package redislock

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/zerolock/zerolock/internal/ctxdone"
)

// waitOptions tune the back-off that backs up release notifications.
type waitOptions struct {
	minBackoff time.Duration
	maxBackoff time.Duration
}

func defaultWaitOptions() waitOptions {
	return waitOptions{minBackoff: 10 * time.Millisecond, maxBackoff: 500 * time.Millisecond}
}

// WithBackoff sets the bounds of the retry back-off of AcquireWaitCtx,
// which only matters when a release notification is lost (a reconnect, a
// store that cannot subscribe) or the holder lets its lock expire; the
// default is 10 ms doubling to 500 ms, jittered, and never longer than the
// holder's remaining time.
// Bounds below a millisecond are raised to one, so a waiter never spins
// against Redis.
func WithBackoff(lo, hi time.Duration) Option {
	return func(o *options) {
		lo = max(lo, time.Millisecond)
		o.wait = waitOptions{minBackoff: lo, maxBackoff: max(hi, lo)}
	}
}

// AcquireWait is AcquireWaitCtx with context.Background().
func (rl *RedisLock) AcquireWait(wait time.Duration) (bool, error) {
	return rl.AcquireWaitCtx(context.Background(), wait)
}

// AcquireWaitCtx waits up to wait (no limit when wait <= 0, then only ctx
// bounds it) for the lock and returns true as soon as it holds it. It
// returns false, with a nil error, when the wait limit passed first; an
// error for which errors.Is(err, ctx.Err()) holds when ctx ended first; and
// a store error when Redis fails.
//
// A waiter does not poll: it subscribes to the lock's release channel
// (one subscription per process and key, shared by all its waiters, made
// before the try it follows so no release is missed) and tries again when
// the holder releases. A jittered back-off, never longer than the holder's
// remaining time, covers lost notifications and locks left to expire.
func (rl *RedisLock) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	ok, err := rl.AcquireCtx(ctx)
	if ok || err != nil {
		return ok, err
	}
	w := waitLoop{store: rl.store, key: rl.key, channel: rl.channel, backoff: rl.waitOpts, wrap: rl.wrap}
	return w.run(ctx, wait, func(ctx context.Context) (bool, time.Duration, error) {
		px, err := rl.px()
		if err != nil {
			return false, 0, err
		}
		return rl.try(ctx, px, true)
	})
}

// A waitLoop is the waiting of every primitive of the package: try, and
// until a try wins, sleep until a release announced on channel wakes it or
// a jittered back-off ends (never longer than the retry hint of the last
// try: the holder's remaining time).
type waitLoop struct {
	store   Store
	key     string // decides the subscription's node on a cluster
	channel string
	backoff waitOptions
	wrap    func(ctx context.Context, op string, err error) error
}

// tryFunc makes one attempt: whether it won, and when the hold that
// refused it ends (0 when unknown).
type tryFunc func(ctx context.Context) (ok bool, retryIn time.Duration, err error)

// run waits up to wait (no limit when wait <= 0) as AcquireWaitCtx does,
// the caller having already tried once.
func (l waitLoop) run(ctx context.Context, wait time.Duration, try tryFunc) (bool, error) {
	waitCtx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	var (
		wake  <-chan struct{}
		woken bool // a release's wake was taken and not yet tried on
	)
	if h := hubFor(l.store, l.key); h != nil {
		w := h.watch(waitCtx, l.channel)
		defer func() {
			if woken {
				h.wake(l.channel) // leaving without trying: hand the release on
			}
			w.close()
		}()
		wake = w.wake
	}

	backoff := l.backoff.minBackoff
	for {
		ok, retryIn, err := try(waitCtx)
		if err == nil {
			woken = false // the try used the wake, won or lost
		}
		switch {
		case ok:
			return true, nil
		case err != nil && ctxdone.Err(ctx) != nil:
			return false, l.wrap(ctx, "acquire", err)
		case err != nil && ctxdone.Err(waitCtx) != nil:
			return false, nil // the wait limit cut the try short
		case err != nil:
			return false, l.wrap(ctx, "acquire", err)
		}

		sleep := jitter(backoff)
		if retryIn > 0 && retryIn < sleep {
			sleep = retryIn + time.Millisecond
		}
		backoff = min(2*backoff, l.backoff.maxBackoff)
		timer := time.NewTimer(sleep)
		select {
		case <-wake:
			woken = true
		case <-timer.C:
		case <-waitCtx.Done():
			timer.Stop()
			if err := ctx.Err(); err != nil {
				return false, l.wrap(ctx, "acquire", err)
			}
			return false, nil
		}
		timer.Stop()
	}
}

// jitter spreads d over [d/2, d) so waiters of many processes do not retry
// in step.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}
