package redislock

import (
	"context"
	"errors"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock/internal/deadline"
)

// RLockWaitCtx waits up to wait (no limit when wait <= 0, then only ctx
// bounds it) for a read share and returns true as soon as it holds one. It
// returns false, with a nil error, when the wait limit passed first; an
// error for which errors.Is(err, ctx.Err()) holds when ctx ended first;
// ErrWaitCutTry when the wait limit ended a try in flight, after which a
// share may be held until RUnlockCtx settles it; ErrOtherSideHeld when this instance holds the write side; ErrNotRWLock
// as RLockCtx does; and a store error when Redis fails.
//
// It waits as RedisLock.AcquireWaitCtx does: woken when the writer unlocks
// or a waiting writer gives up, with a jittered back-off (never longer
// than the refusing writer's remaining time) for lost notifications.
func (l *RWLock) RLockWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	ctx, a := l.obsRead.StartAcquire(ctx, true)
	ok, err := l.rlockWait(ctx, wait)
	endWait(ctx, a, ok, err, 0)
	return ok, err
}

// rlockWait is RLockWaitCtx unobserved.
func (l *RWLock) rlockWait(ctx context.Context, wait time.Duration) (bool, error) {
	ok, err := l.rlock(ctx)
	if ok || err != nil {
		return ok, err
	}
	return l.waitLoop("rlock").run(ctx, wait, func(ctx context.Context) (bool, time.Duration, error) {
		px, err := l.px()
		if err != nil {
			return false, 0, err
		}
		return l.tryRead(ctx, px, true)
	})
}

// LockWaitCtx waits up to wait (no limit when wait <= 0, then only ctx
// bounds it) for the write side and returns true as soon as it holds it,
// with the results of RLockWaitCtx otherwise (ErrOtherSideHeld when this
// instance holds a read share).
//
// While it waits, its intent (a companion key in the lock's slot) stops
// new readers, so a stream of readers cannot starve it; readers already
// holding keep their shares until they unlock or expire. The intent is
// left by the tries that follow its first, refused one: those are made
// once the subscription to the release channel is in place (or given up
// on), and each comes before the intent left by the one before could
// lapse, so waiting for a slow subscription opens no gap for readers. It
// is woken when the last reader or the writer unlocks. When it gives up
// (the wait limit, ctx, an error) it deletes its intent and wakes the
// readers it held back, best effort. The intent is renewed by each try and
// otherwise expires after twice the longest back-off (WithBackoff), at
// least a second and at most the lock's expiry, so a waiting writer that
// crashed holds readers back no longer than that.
func (l *RWLock) LockWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	ctx, a := l.obsWrite.StartAcquire(ctx, true)
	ok, err := l.lockWait(ctx, wait)
	endWait(ctx, a, ok, err, l.writeFence(ok))
	return ok, err
}

// lockWait is LockWaitCtx unobserved.
func (l *RWLock) lockWait(ctx context.Context, wait time.Duration) (ok bool, err error) {
	var intent bool // a try may have left this instance's intent
	defer func() {
		if !ok && intent {
			l.abandon(ctx)
		}
	}()
	try := func(ctx context.Context) (bool, time.Duration, error) {
		px, err := l.px()
		if err != nil {
			return false, 0, err
		}
		ok, retryIn, err := l.tryWrite(ctx, px, true)
		if !ok && !errors.Is(err, ErrOtherSideHeld) {
			intent = true
		}
		// Try again before the intent could lapse.
		if half := l.intentPX(px) / 2; !ok && err == nil && (retryIn <= 0 || retryIn > half) {
			retryIn = half
		}
		return ok, retryIn, err
	}
	// The first try leaves no intent: the subscription the loop makes
	// before its first try may take up to confirmTimeout, longer than the
	// intent may live.
	ok, err = l.lock(ctx)
	if ok || err != nil {
		return ok, err
	}
	return l.waitLoop("lock").run(ctx, wait, try)
}

// abandon deletes this instance's intent, if it is still there, and wakes
// the readers it held back. It is best effort, even when ctx has ended: a
// leftover intent only holds readers back until its expiry.
func (l *RWLock) abandon(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abandonTimeout)
	defer cancel()
	_, _ = deadline.Within(ctx, l.guard, func() error {
		return l.conn.Run(ctx, rwAbandonScript, l.intentKeys, l.releaseArgs...).Err()
	})
}

// abandonTimeout bounds the deletion of a waiting writer's intent after
// its wait ended: with WithDeadlineGuard (or a client that keeps
// deadlines) a hung server delays the return no longer.
const abandonTimeout = time.Second

// waitLoop is the wait of both sides: one release channel for the key.
// Its errors are named op, the side waited for, rather than the loop's
// "acquire".
func (l *RWLock) waitLoop(op string) waitLoop {
	wrap := func(ctx context.Context, _ string, err error) error {
		return l.wrap(ctx, op, err)
	}
	return waitLoop{conn: &l.conn, key: l.key, channel: l.channel, backoff: l.waitOpts, wrap: wrap}
}

// Reader returns the read side of the lock as a zerolock.Locker:
// AcquireCtx is RLockCtx, ReleaseCtx RUnlockCtx. It is also a
// zerolock.Waiter (RLockWaitCtx), zerolock.Watcher, zerolock.Fencer (its
// Fence is 0 unless the RWLock was made WithFencing) and
// zerolock.Refresher. Readers of one key do not exclude each other.
func (l *RWLock) Reader() zerolock.Locker {
	return rwReader{l}
}

// Writer returns the write side of the lock as a zerolock.Locker:
// AcquireCtx is LockCtx, ReleaseCtx UnlockCtx. It is also a
// zerolock.Waiter (LockWaitCtx), zerolock.Watcher, zerolock.Fencer
// (minting tokens only when the RWLock was made WithFencing, as a
// RedisLock does) and zerolock.Refresher, so it can stand where a
// RedisLock does.
func (l *RWLock) Writer() zerolock.Locker {
	return rwWriter{l}
}

type rwReader struct{ *RWLock }

func (r rwReader) AcquireCtx(ctx context.Context) (bool, error) { return r.RLockCtx(ctx) }
func (r rwReader) ReleaseCtx(ctx context.Context) (bool, error) { return r.RUnlockCtx(ctx) }
func (r rwReader) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	return r.RLockWaitCtx(ctx, wait)
}

type rwWriter struct{ *RWLock }

func (w rwWriter) AcquireCtx(ctx context.Context) (bool, error) { return w.LockCtx(ctx) }
func (w rwWriter) ReleaseCtx(ctx context.Context) (bool, error) { return w.UnlockCtx(ctx) }
func (w rwWriter) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	return w.LockWaitCtx(ctx, wait)
}

var (
	_ zerolock.Waiter    = rwReader{}
	_ zerolock.Watcher   = rwReader{}
	_ zerolock.Fencer    = rwReader{}
	_ zerolock.Refresher = rwReader{}
	_ zerolock.Waiter    = rwWriter{}
	_ zerolock.Watcher   = rwWriter{}
	_ zerolock.Fencer    = rwWriter{}
	_ zerolock.Refresher = rwWriter{}
)
