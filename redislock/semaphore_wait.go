package redislock

import (
	"context"
	"time"
)

// AcquireWaitCtx waits up to wait (no limit when wait <= 0, then only ctx
// bounds it) for a permit and returns true as soon as it holds one. It
// returns false, with a nil error, when the wait limit passed first; an
// error for which errors.Is(err, ctx.Err()) holds when ctx ended first;
// ErrWaitCutTry when the wait limit ended a try in flight, after which a
// permit may be held until ReleaseCtx settles it; ErrInvalidExpiry or ErrNotSemaphore as AcquireCtx does; and a store
// error when Redis fails.
//
// A waiter does not poll: it is woken when a holder releases its permit
// (each release wakes one waiter per process, since it frees one permit),
// as RedisLock.AcquireWaitCtx is. A jittered back-off, never longer than
// the time until the earliest permit expires, covers lost notifications
// and permits left to expire.
func (s *Semaphore) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	ctx, a := s.obs.StartAcquire(ctx, true)
	ok, err := s.acquireWait(ctx, wait)
	endWait(ctx, a, ok, err, 0)
	return ok, err
}

// acquireWait is AcquireWaitCtx unobserved.
func (s *Semaphore) acquireWait(ctx context.Context, wait time.Duration) (bool, error) {
	ok, err := s.acquire(ctx)
	if ok || err != nil {
		return ok, err
	}
	w := waitLoop{conn: &s.conn, key: s.key, channel: s.channel, backoff: s.waitOpts, wrap: s.wrap}
	return w.run(ctx, wait, func(ctx context.Context) (bool, time.Duration, error) {
		px, err := s.px()
		if err != nil {
			return false, 0, err
		}
		return s.try(ctx, px)
	})
}
