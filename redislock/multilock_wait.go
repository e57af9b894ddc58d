package redislock

import (
	"context"
	"time"
)

// AcquireWaitCtx waits up to wait (no limit when wait <= 0, then only ctx
// bounds it) for all the keys and returns true as soon as it holds them.
// It returns false, with a nil error, when the wait limit passed first; an
// error for which errors.Is(err, ctx.Err()) holds when ctx ended first;
// ErrWaitCutTry when the wait limit ended a try in flight, after which
// keys may be held until ReleaseCtx settles it; an
// error wrapping ErrNotLockKey at once when a key holds something other
// than a lock; and a store error when Redis fails.
//
// Between tries it holds none of the keys, so waiting MultiLocks cannot
// deadlock. It does not poll: it listens on the release channel of the key
// that refused its last try (a RedisLock's release of that key wakes it as
// well), moving to another key's channel when that one refuses next; a
// jittered back-off (WithBackoff), never longer than the refusing hold's
// remaining time, covers lost notifications and holds left to expire.
func (m *MultiLock) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	ctx, a := m.obs.StartAcquire(ctx, true)
	ok, err := m.acquireWait(ctx, wait)
	endWait(ctx, a, ok, err, 0)
	return ok, err
}

// acquireWait is AcquireWaitCtx unobserved.
func (m *MultiLock) acquireWait(ctx context.Context, wait time.Duration) (bool, error) {
	px, err := m.px()
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, m.wrap(ctx, "acquire", err)
	}
	r := m.try(ctx, px, false)
	switch {
	case r.err != nil:
		return false, m.wrap(ctx, "acquire", r.err)
	case r.ok:
		return true, nil
	}
	refused := r.refused // only this call's tries change it
	w := waitLoop{
		conn: &m.conn, key: m.keys[refused], channel: m.channels[refused],
		backoff: m.waitOpts, wrap: m.wrap,
		refusedBy: func() (string, string) { return m.keys[refused], m.channels[refused] },
	}
	return w.run(ctx, wait, func(ctx context.Context) (bool, time.Duration, error) {
		px, err := m.px()
		if err != nil {
			return false, 0, err
		}
		r := m.try(ctx, px, true)
		if r.err == nil && !r.ok {
			refused = r.refused
		}
		return r.ok, r.retryIn, r.err
	})
}
