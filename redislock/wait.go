package redislock

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/zerolock/zerolock/internal/ctxdone"
	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/deadline"
	"github.com/zerolock/zerolock/redislock/internal/hub"
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
// against Redis. A RedLock, which has no waiting acquire, refuses it (see
// Option).
func WithBackoff(lo, hi time.Duration) Option {
	return func(o *options) {
		lo = max(lo, time.Millisecond)
		o.wait = waitOptions{minBackoff: lo, maxBackoff: max(hi, lo)}
		o.given |= optBackoff
	}
}

// AcquireWaitCtx waits up to wait (no limit when wait <= 0, then only ctx
// bounds it) for the lock and returns true as soon as it holds it. It
// returns false, with a nil error, when the wait limit passed first; an
// error for which errors.Is(err, ctx.Err()) holds when ctx ended first;
// ErrWaitCutTry when the wait limit ended a try in flight (only where calls
// return by their deadline), after which the lock may or may not be held
// and ReleaseCtx settles it; and a store error when Redis fails.
//
// A waiter does not poll: it subscribes to the lock's release channel
// (one subscription per process and key, shared by all its waiters, made
// before the try it follows so no release is missed) and tries again when
// the holder releases: each refused try marks the hold as waited on, in
// the same script, a hold won by waiting starts marked (other waiters may
// still wait), and a release announces itself only when it deletes a
// marked hold, so releases nobody waits for cost no announcement. A jittered
// back-off, never longer than the holder's remaining time, covers lost
// notifications and locks left to expire.
func (rl *RedisLock) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	ctx, a := rl.obs.StartAcquire(ctx, true)
	ok, err := rl.acquireWait(ctx, wait)
	endWait(ctx, a, ok, err, rl.heldFence(ok))
	return ok, err
}

// acquireWait is AcquireWaitCtx unobserved.
func (rl *RedisLock) acquireWait(ctx context.Context, wait time.Duration) (bool, error) {
	ok, err := rl.acquire(ctx)
	if ok || err != nil {
		return ok, err
	}
	w := waitLoop{conn: &rl.conn, key: rl.Key(), channel: rl.releaseChannel(), backoff: rl.more.waitOpts, wrap: rl.wrap}
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
	conn    *conn.Conn
	key     string // decides the subscription's node on a cluster
	channel string
	backoff waitOptions
	wrap    func(ctx context.Context, op string, err error) error

	// refusedBy, when set, names the key whose hold refused the last try
	// and that key's release channel: a waiter that several keys can
	// refuse (a multi-key lock) listens where the release it needs will be
	// announced. When it changes, the loop hands on a wake that it could
	// not use, moves its subscription, and tries again at once: the
	// release it would wait for may have come before the new subscription.
	// Nil (every other primitive) keeps key and channel for the whole wait.
	refusedBy func() (key, channel string)
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
		sub   subscription
		woken bool // a release's wake was taken and not yet tried on
	)
	sub.listen(waitCtx, l.conn, l.key, l.channel)
	defer func() {
		sub.leave(woken) // leaving without trying: hand the release on
	}()

	backoff := l.backoff.minBackoff
	for {
		ok, retryIn, err := try(waitCtx)
		triedOnWake := woken
		if err == nil {
			woken = false // the try used the wake, won or lost
		}
		switch {
		case ok:
			return true, nil
		case err != nil && ctxdone.Err(ctx) != nil:
			return false, l.wrap(ctx, "acquire", err)
		case err != nil && ctxdone.Err(waitCtx) != nil && deadline.MayHaveRun(err):
			// The wait limit cut short a try that was sent
			// (WithDeadlineGuard, or a client with ContextTimeoutEnabled):
			// it may have taken, or may still take, the lock, so this is
			// not "the limit passed first".
			return false, l.wrap(ctx, "acquire", fmt.Errorf("%w: %w", ErrWaitCutTry, err))
		case err != nil && ctxdone.Err(waitCtx) != nil:
			return false, nil // the limit passed before the try was sent
		case err != nil:
			return false, l.wrap(ctx, "acquire", err)
		}

		if l.refusedBy != nil {
			if key, ch := l.refusedBy(); ch != sub.channel {
				// Another key refused: the release that woke this try
				// was not taken, so it goes to the next waiter there.
				sub.leave(triedOnWake)
				sub.listen(waitCtx, l.conn, key, ch)
				if sub.wake != nil {
					continue
				}
			}
		}
		sleep := jitter(backoff)
		if retryIn > 0 && retryIn < sleep {
			sleep = retryIn + time.Millisecond
		}
		backoff = min(2*backoff, l.backoff.maxBackoff)
		timer := time.NewTimer(sleep)
		select {
		case <-sub.wake:
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

// A subscription is a waitLoop's registration on one release channel; with
// a store that cannot subscribe it has no wake, and the loop relies on its
// back-off alone.
type subscription struct {
	hub     *hub.Hub
	waiter  *hub.Waiter
	channel string
	wake    <-chan struct{}
}

// listen registers on channel, the release channel of key, once the
// server confirmed the subscription (see hub.Hub.Watch).
func (s *subscription) listen(ctx context.Context, c *conn.Conn, key, channel string) {
	*s = subscription{channel: channel}
	if h := hub.For(ctx, c, key); h != nil {
		s.hub, s.waiter = h, h.Watch(ctx, channel)
		s.wake = s.waiter.Woken()
	}
}

// leave unregisters, first handing a release's wake on to the channel's
// next waiter when handOn says this one took it and did not use it.
func (s *subscription) leave(handOn bool) {
	if s.hub == nil {
		return
	}
	if handOn {
		s.hub.Wake(s.channel)
	}
	s.waiter.Close()
	s.hub, s.waiter, s.wake = nil, nil, nil
}

// jitter spreads d over [d/2, d) so waiters of many processes do not retry
// in step.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}
