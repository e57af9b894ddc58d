package locktest

import (
	"context"
	"fmt"
	"time"

	"github.com/zerolock/zerolock"
)

// memoryWatch is one Watch of a hold: while it runs, the hold does not
// expire (see memoryBackend.live).
type memoryWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// Watch keeps this Locker's hold from expiring until ReleaseCtx, MaxHold
// or the end of ctx, and returns a context derived from ctx that ends
// then; watching again returns the running watch's context. Nothing can
// take a watched hold away, so no goroutine renews it.
func (l *memoryLocker) Watch(ctx context.Context, opts ...zerolock.WatchOption) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.watch != nil && l.watch.ctx.Err() == nil {
		return l.watch.ctx
	}
	b := l.b
	b.mu.Lock()
	h := b.live(l.key)
	if h == nil || h.owner != l {
		b.mu.Unlock()
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(fmt.Errorf("%w: Watch of a lock that is not held", zerolock.ErrLockLost))
		return ctx
	}
	watchCtx, cancel := context.WithCancelCause(ctx)
	w := &memoryWatch{ctx: watchCtx, cancel: cancel}
	h.watch = w
	b.mu.Unlock()
	l.watch = w

	var maxHold *time.Timer
	if d := zerolock.ApplyWatchOptions(opts...).MaxHold; d > 0 {
		maxHold = time.AfterFunc(d, func() { cancel(zerolock.ErrMaxHold) })
	}
	context.AfterFunc(watchCtx, func() {
		if maxHold != nil {
			maxHold.Stop()
		}
		b.unwatch(l.key, w)
	})
	return watchCtx
}

// endWatch ends this Locker's watch, if one runs, with cause.
func (l *memoryLocker) endWatch(cause error) {
	l.mu.Lock()
	w := l.watch
	l.watch = nil
	l.mu.Unlock()
	if w != nil {
		w.cancel(cause)
	}
}

// unwatch lets key's hold expire again, a full expiry from now, if w
// still keeps it alive.
func (b *memoryBackend) unwatch(key string, w *memoryWatch) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if h := b.holds[key]; h != nil && h.watch == w {
		h.watch = nil
		h.until = time.Now().Add(h.owner.expiry)
	}
}
