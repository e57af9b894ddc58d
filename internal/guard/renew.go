package guard

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/keyspec"
)

// renewal keeps a request's hold alive while its handler runs (Policy
// Renew). A handler that returns within a third of the expiry costs only a
// timer and a cancellable context: the backend's watchdog starts only
// then, so a fast handler sends no renewal and starts no goroutine. From then on the watchdog
// renews the hold until the lease ends it, or until MaxHold (counted from
// the acquisition) passes: renewal stops, the handler's context is
// cancelled with zerolock.ErrMaxHold, and the hold ends at its expiry.
//
// The handler's context is the request's, also cancelled with the watch's
// cause (zerolock.ErrLockLost, ErrRenewFailed, ErrMaxHold) when the hold
// ends first, so its database calls stop too. The watch itself lives as
// long as the lease, not as long as the request: go-zero's timeout (REST
// and zrpc) answers the client and cancels the request's context while the
// handler goes on, and the hold must last as long as the work does.
type renewal struct {
	ctx     context.Context // the request's: its values (the trace) reach the watch and the logs
	w       zerolock.Watcher
	lease   *Lease
	maxHold time.Duration
	cancel  context.CancelCauseFunc // the handler's context

	mu    sync.Mutex
	timer *time.Timer
	// stop ends a started watch without releasing (window mode); nil until
	// the watchdog starts.
	stop  context.CancelFunc
	ended bool
}

// renewAfter is when renewal starts, as a fraction of the expiry: the
// watchdog's first renewal is at once, and from then on every third.
const renewAfter = 3

// startRenewal returns the handler's context, derived from ctx, and starts
// the timer that starts the watchdog.
func startRenewal(ctx context.Context, w zerolock.Watcher, l *Lease, maxHold time.Duration) (context.Context, *renewal) {
	handlerCtx, cancel := context.WithCancelCause(ctx)
	r := &renewal{ctx: ctx, w: w, lease: l, maxHold: maxHold, cancel: cancel}
	r.timer = time.AfterFunc(l.expire/renewAfter, r.watch)
	return handlerCtx, r
}

// watch starts the watchdog, unless the lease ended first.
func (r *renewal) watch() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	// The watch outlives the request (go-zero's timeout cancels it while
	// the handler goes on), but keeps its values: the renewals and the
	// loss land on the request's trace.
	parent, stop := context.WithCancel(context.WithoutCancel(r.ctx))
	r.stop = stop
	left := r.maxHold - time.Since(r.lease.start)
	if left <= 0 {
		left = time.Nanosecond
	}
	lockCtx := r.w.Watch(parent, zerolock.MaxHold(left))
	context.AfterFunc(lockCtx, func() {
		cause := context.Cause(lockCtx)
		r.mu.Lock()
		running := !r.ended
		r.mu.Unlock()
		if running && parent.Err() == nil && !errors.Is(cause, zerolock.ErrReleased) {
			r.lease.lost(r.ctx, cause, r.maxHold)
		}
		r.cancel(cause)
	})
}

// finish ends the renewal when the handler returned (or panicked): it
// cancels the handler's context, and reports whether the watchdog had
// started. It keeps a started watchdog
// running: the release or the record that follows stops it, so the hold is
// renewed until then; stopWatch stops it where the hold outlives the
// handler (window mode), and after the release or record in any case.
func (r *renewal) finish() (started bool) {
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	r.timer.Stop()
	r.cancel(context.Canceled) // the handler returned
	return r.stop != nil
}

// stopWatch stops a started watchdog without releasing the hold.
func (r *renewal) stopWatch() {
	if r == nil {
		return
	}
	r.mu.Lock()
	stop := r.stop
	r.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// lost logs and counts a hold that ended while its handler ran: MaxHold
// passed, or the hold was lost. A duplicate may run once it expires.
func (l *Lease) lost(ctx context.Context, cause error, maxHold time.Duration) {
	l.metrics.countLost(l.label, cause)
	if errors.Is(cause, zerolock.ErrMaxHold) {
		logx.WithContext(ctx).Errorf("zerolock: the handler of %s (key …%s) still runs after MaxHold (%v): renewal stopped, "+
			"its context is cancelled, and its hold ends at its expiry (%v), when a duplicate may run; "+
			"raise MaxHold if the handler may be this slow", l.label, keyspec.Digest(l.key), maxHold, l.expire)
		return
	}
	logx.WithContext(ctx).Errorf("zerolock: the hold of %s (key …%s) ended while its handler ran, whose context is cancelled: %v",
		l.label, keyspec.Digest(l.key), cause)
}
