package guard

import (
	"context"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/keyspec"
)

// Lease is a held request lock.
type Lease struct {
	lock    zerolock.Locker
	key     string
	label   string
	start   time.Time
	expire  time.Duration // the lock's expiry: a release slower than it is moot
	retain  time.Duration // replay mode: how long Record keeps the result
	metrics *Metrics
	renewal *renewal // nil when the hold is not renewed
}

// Record stores a completed request's result in place of the lock, for
// the policy's Retain, so that retries get it (replay mode). It reports
// false when the lock was lost first, so nothing was stored (logged), and
// works on a context not cancelled with the request's, as release does.
// Call it, or End, once.
func (l *Lease) Record(ctx context.Context, record []byte) bool {
	l.metrics.observeHold(l.label, time.Since(l.start))
	l.renewal.finish()
	defer l.renewal.stopWatch()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.expire)
	defer cancel()
	rec, isRecorder := l.lock.(zerolock.Recorder)
	if !isRecorder {
		// Check saw a Recorder; a backend whose Lockers differ by key has
		// none here. Nothing can be stored: release, so the retry runs.
		logx.WithContext(ctx).Errorf("zerolock: the lock of %s is a %T, which cannot store a result: released",
			l.label, l.lock)
		l.release(ctx)
		return false
	}
	ok, err := rec.RecordCtx(rctx, record, l.retain)
	switch {
	case err != nil:
		logx.WithContext(ctx).Errorf("zerolock: store the result of %s (key …%s): %v",
			l.label, keyspec.Digest(l.key), err)
	case !ok:
		logx.WithContext(ctx).Errorf("zerolock: the lock of %s (key …%s) was lost before its result was stored: "+
			"a retry will run again; the lock's expiry is shorter than the handler", l.label, keyspec.Digest(l.key))
	}
	return ok && err == nil
}

// End records how long the handler held the lock and releases it unless
// keep is set. Call it once, when the handler returns or panics.
//
// A kept hold (window mode) stops being renewed; one that was renewed
// (its handler ran past a third of the expiry) is extended once more to
// the full expiry, so that the window lasts Expire after the handler
// returned, as it lasts Expire after the acquisition for a fast handler.
func (l *Lease) End(ctx context.Context, keep bool) {
	l.metrics.observeHold(l.label, time.Since(l.start))
	renewed := l.renewal.finish()
	if !keep {
		l.release(ctx)
		l.renewal.stopWatch()
		return
	}
	l.renewal.stopWatch()
	if renewed {
		l.refresh(ctx)
	}
}

// refresh extends a kept hold to its full expiry, on a context not
// cancelled with the request's.
func (l *Lease) refresh(ctx context.Context) {
	r, ok := l.lock.(zerolock.Refresher)
	if !ok {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.expire)
	defer cancel()
	if held, err := r.RefreshCtx(rctx); err != nil || !held {
		logx.WithContext(ctx).Errorf("zerolock: extend the window of %s (key …%s) after its handler: held %v, %v",
			l.label, keyspec.Digest(l.key), held, err)
	}
}

// release deletes the lock if it is still ours. It runs on a context that
// is not cancelled with the request's, which may be over by now: the
// release must still reach Redis or the lock lingers until it expires. It
// gives up after the lock's expiry (the watchdog stops first, so the key is
// gone by then anyway), so a hung server cannot hold the request longer.
func (l *Lease) release(ctx context.Context) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.expire)
	defer cancel()
	if _, err := l.lock.ReleaseCtx(rctx); err != nil {
		logx.WithContext(ctx).Errorf("zerolock: release lock of %s (key …%s): %v",
			l.label, keyspec.Digest(l.key), err)
	}
}
