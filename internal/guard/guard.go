// Package guard is the lock flow shared by the REST middleware and the gRPC
// interceptor: take the request's lock, tell a duplicate from a store
// failure, honour FailOpen, release on the way out, and count outcomes.
// Each transport maps the outcome to its own status; neither imports the
// other.
package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/ctxdone"
	"github.com/zerolock/zerolock/internal/keyspec"
	"github.com/zerolock/zerolock/redislock"
)

// Outcome is what happened to a request that matched a rule; it is the
// value of the outcome label of the request counters.
type Outcome string

// The outcomes.
const (
	Acquired   Outcome = "acquired"
	Rejected   Outcome = "rejected"
	BadRequest Outcome = "bad_request"
	StoreError Outcome = "store_error"
	FailedOpen Outcome = "fail_open"
	// Stored: in replay mode, the key holds a completed request's result
	// (Result.Record). The transport decodes it and counts Replayed,
	// Mismatch or Rejected.
	Stored Outcome = "stored"
	// Replayed: a retry got the stored result; the handler did not run.
	Replayed Outcome = "replayed"
	// Mismatch: the key's stored result belongs to another request.
	Mismatch Outcome = "mismatch"
)

// Guard takes request locks from a backend.
type Guard struct {
	Backend  zerolock.Backend
	FailOpen bool
	// Renew keeps an inflight lock or a limit mode permit alive while the
	// handler runs (Policy Window locks are never renewed) and gives the
	// handler a context that ends when the lock is lost.
	Renew bool
	// Fence mints a fencing token per acquisition and puts it in the
	// handler's context (zerolock.FenceFromContext).
	Fence bool
	// Replay says that some rule is in replay mode, whose locks must be
	// zerolock.Recorders (Check).
	Replay  bool
	Metrics *Metrics
}

// Result is the answer of Acquire.
type Result struct {
	Outcome Outcome
	// Ctx is the context to run the handler with when Outcome is Acquired:
	// the request's, bounded by the lock when renewed, carrying the fencing
	// token when fenced.
	Ctx context.Context
	// Lease is set when Outcome is Acquired.
	Lease *Lease
	// RetryAfter is the holder's remaining time when Outcome is Rejected;
	// when it is Limited, the time until the next permit frees by expiry.
	RetryAfter time.Duration
	// Err is the store's error when Outcome is StoreError or FailedOpen.
	Err error
	// Record is the stored result when Outcome is Stored.
	Record []byte
}

// Acquire tries once to take key under policy. label names the route or
// method in metrics, logs and the lock's own metrics and spans (its
// zerolock.LockerOptions.Name); logs carry a digest of the key, never
// values.
func (g *Guard) Acquire(ctx context.Context, label, key string, policy Policy) Result {
	lock, err := g.newLock(label, key, policy)
	if err != nil {
		// CheckLimit refused this at start-up: not an outage, never served
		// unlocked.
		logx.WithContext(ctx).Errorf("zerolock: lock for %s: %v", label, err)
		g.Metrics.count(label, StoreError)
		return Result{Outcome: StoreError, Err: err}
	}
	var (
		ok     bool
		record []byte
	)
	if rec, isRecorder := lock.(zerolock.Recorder); policy.Replay && isRecorder {
		ok, record, err = rec.AcquireOrReadCtx(ctx)
	} else {
		ok, err = lock.AcquireCtx(ctx)
	}
	var res Result
	switch {
	case err != nil && ctxdone.Err(ctx) != nil:
		// The request itself ended (the client left, a server timeout): not
		// a store failure, and never a reason to run unlocked.
		res = Result{Outcome: StoreError, Err: err}
	case err != nil && g.FailOpen && !misconfigured(err):
		// FailOpen is for a store that is down, not for one that is
		// misconfigured: that is refused, loudly, until it is fixed.
		res = Result{Outcome: FailedOpen, Err: err}
		logx.WithContext(ctx).Errorf("zerolock: lock store failed for %s (key …%s), serving unlocked: %v",
			label, keyspec.Digest(key), err)
	case err != nil:
		res = Result{Outcome: StoreError, Err: err}
		logx.WithContext(ctx).Errorf("zerolock: lock store failed for %s (key …%s): %v",
			label, keyspec.Digest(key), err)
	case record != nil:
		return Result{Outcome: Stored, Record: record} // counted by the transport
	case !ok && policy.Permits > 0:
		res = Result{Outcome: Limited, RetryAfter: retryAfter(ctx, lock, policy.Expire)}
	case !ok:
		res = Result{Outcome: Rejected, RetryAfter: retryAfter(ctx, lock, policy.Expire)}
	default:
		res = Result{Outcome: Acquired, Ctx: ctx, Lease: &Lease{lock: lock, key: key, label: label, start: time.Now(), expire: policy.Expire, retain: policy.Retain, metrics: g.Metrics}}
		if w, ok := lock.(zerolock.Watcher); ok && g.Renew && !policy.Window {
			res.Ctx = watchUntilReleased(ctx, w)
		}
		if f, ok := lock.(zerolock.Fencer); ok && g.Fence && policy.Permits == 0 {
			res.Ctx = zerolock.ContextWithFence(res.Ctx, f.Fence())
		}
	}
	g.Metrics.count(label, res.Outcome)
	return res
}

// watchUntilReleased renews the request's lock until the lease releases
// it, not until the request ends: go-zero's timeout (REST and zrpc)
// answers the client and cancels the request's context while the handler
// goes on running, and the lock must live as long as the work does, or a
// duplicate (or, in limit mode, one request too many) runs beside it. The
// handler's context is the request's, also cancelled with the watch's
// cause (zerolock.ErrLockLost, ...) when the lock is lost. Every lease is
// ended, and its release stops the watch.
func watchUntilReleased(ctx context.Context, w zerolock.Watcher) context.Context {
	lockCtx := w.Watch(context.WithoutCancel(ctx))
	handlerCtx, cancel := context.WithCancelCause(ctx)
	context.AfterFunc(lockCtx, func() { cancel(context.Cause(lockCtx)) })
	return handlerCtx
}

// misconfigured tells a store that answers but is set up wrong (it rejects
// go-zero's CLIENT SETINFO, or a key holds what no lock of this kind
// wrote) from one that is down: FailOpen serves only the second unlocked.
func misconfigured(err error) bool {
	return errors.Is(err, redislock.ErrIdentityRejected) || errors.Is(err, redislock.ErrNotSemaphore)
}

// Count records an outcome decided before any lock was tried (BadRequest).
func (g *Guard) Count(label string, outcome Outcome) {
	g.Metrics.count(label, outcome)
}

// StoredRetryAfter is the time a key holding a stored result has left, for
// the refusal of a retry that cannot be replayed (a result too large to
// keep, a record this build cannot read): the key's TTL, a second when it
// has just expired, or the policy's Retain when the backend cannot tell.
// label names the rule, as for Acquire.
func (g *Guard) StoredRetryAfter(ctx context.Context, label, key string, policy Policy) time.Duration {
	lock := g.Backend.NewLocker(key, zerolock.LockerOptions{Expiry: policy.Expire, Name: label})
	return retryAfter(ctx, lock, policy.Retain)
}

// checkName is the name of the locks Check and CheckLimit make only to
// inspect the backend's abilities: they are never acquired.
const checkName = "zerolock:check"

// Check tells whether backend's locks can do what the configuration asks:
// Renew needs a Watcher, Fence a Fencer, and replay mode a Recorder.
func (g *Guard) Check() error {
	lock := g.Backend.NewLocker(checkName, zerolock.LockerOptions{Expiry: time.Second, Fencing: g.Fence, Name: checkName})
	if _, ok := lock.(zerolock.Watcher); g.Renew && !ok {
		return fmt.Errorf("%w: Renew needs a lock backend that can renew (%T cannot)", ErrBadPolicy, lock)
	}
	if _, ok := lock.(zerolock.Recorder); g.Replay && !ok {
		return fmt.Errorf("%w: replay mode needs a lock backend that can store a result in place of its lock "+
			"(%T cannot: Redlock, etcd and ZooKeeper locks cannot); use a Redis store, or inflight or window mode", ErrBadPolicy, lock)
	}
	if _, ok := lock.(zerolock.Fencer); g.Fence && !ok {
		return fmt.Errorf("%w: Fence needs a lock backend that mints fencing tokens (%T cannot)", ErrBadPolicy, lock)
	}
	return nil
}

// retryAfter is the holder's remaining time; a second when the holder
// released in the meantime, and the full expiry when the backend cannot
// tell.
func retryAfter(ctx context.Context, lock zerolock.Locker, expire time.Duration) time.Duration {
	t, ok := lock.(zerolock.TTLer)
	if !ok {
		return expire
	}
	ttl, err := t.TTL(ctx)
	switch {
	case err != nil:
		return expire
	case ttl <= 0:
		return time.Second
	}
	return ttl
}

// Lease is a held request lock.
type Lease struct {
	lock    zerolock.Locker
	key     string
	label   string
	start   time.Time
	expire  time.Duration // the lock's expiry: a release slower than it is moot
	retain  time.Duration // replay mode: how long Record keeps the result
	metrics *Metrics
}

// Record stores a completed request's result in place of the lock, for
// the policy's Retain, so that retries get it (replay mode). It reports
// false when the lock was lost first, so nothing was stored (logged), and
// works on a context not cancelled with the request's, as release does.
// Call it, or End, once.
func (l *Lease) Record(ctx context.Context, record []byte) bool {
	l.metrics.observeHold(l.label, time.Since(l.start))
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
func (l *Lease) End(ctx context.Context, keep bool) {
	l.metrics.observeHold(l.label, time.Since(l.start))
	if !keep {
		l.release(ctx)
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
