// Package guard is the request flow shared by the REST middleware and the
// gRPC interceptor. It compiles every rule's lock settings with one wording
// (Compile), assembles the key (Rule.Key), and owns the call (Serve): take
// the request's lock, tell a duplicate from a store failure, honour
// FailOpen, run the handler, keep, record or release, replay a stored
// result, count outcomes. Each transport supplies only an Exchange: run
// its handler, and answer in its own encoding and statuses. It knows locks
// only through the zerolock contract, and neither transport.
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
	"github.com/zerolock/zerolock/internal/replay"
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
	// (Result.Record). Serve decodes it and counts Replayed, Mismatch,
	// Rejected (a result not kept) or StoreError (one it cannot read).
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
	// Fence mints a fencing token per acquisition and puts it in the
	// handler's context (zerolock.FenceFromContext).
	Fence   bool
	Metrics *Metrics
	// RecordKind marks the transport's stored results (replay.Record.Kind),
	// so a key shared by mistake never replays one transport's as the
	// other's; MaxRecord bounds a stored result's decoded payload.
	RecordKind byte
	MaxRecord  int
	// CallerKeys names, in the transport's terms, the keys that name a
	// caller, for Compile's refusal of a replay rule without one:
	// "claim:userId (...) or header:Authorization".
	CallerKeys string
}

// Result is the answer of Acquire.
type Result struct {
	Outcome Outcome
	// Ctx is the context to run the handler with when Outcome is Acquired:
	// the request's, also ended when a renewed hold ends first (see
	// renewal), carrying the fencing token when fenced.
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
	// lock is the request's lock when Outcome is Stored, whose TTL says
	// when the stored result expires.
	lock zerolock.Locker
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
		rw, canWait := rec.(zerolock.RecordWaiter)
		if wait := waitWithin(ctx, policy.Wait); canWait && wait > 0 {
			ok, record, err = rw.AcquireOrReadWaitCtx(ctx, wait)
		} else {
			ok, record, err = rec.AcquireOrReadCtx(ctx)
		}
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
		return Result{Outcome: Stored, Record: record, lock: lock} // counted by serveStored
	case !ok && policy.Permits > 0:
		res = Result{Outcome: Limited, RetryAfter: retryAfter(ctx, lock, policy.Expire)}
	case !ok:
		res = Result{Outcome: Rejected, RetryAfter: retryAfter(ctx, lock, policy.Expire)}
	default:
		res = Result{Outcome: Acquired, Ctx: ctx, Lease: &Lease{lock: lock, key: key, label: label, start: time.Now(), expire: policy.Expire, retain: policy.Retain, metrics: g.Metrics}}
		if w, ok := lock.(zerolock.Watcher); ok && policy.Renew {
			res.Ctx, res.Lease.renewal = startRenewal(ctx, w, res.Lease, policy.MaxHold)
		}
		if f, ok := lock.(zerolock.Fencer); ok && g.Fence && policy.Permits == 0 {
			res.Ctx = zerolock.ContextWithFence(res.Ctx, f.Fence())
		}
	}
	g.Metrics.count(label, res.Outcome)
	return res
}

// waitWithin bounds a replay rule's Wait by the request's deadline: a
// duplicate still waiting is refused with nine tenths of the time left, so
// that its refusal (a 4xx) is written before go-zero's timeout would answer
// 503, which the service's breaker counts as a failure.
func waitWithin(ctx context.Context, wait time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok && wait > 0 {
		wait = min(wait, time.Until(d)*9/10)
	}
	return wait
}

// misconfigured tells a store that answers but is set up wrong (a key
// holds what no lock of this kind wrote, say) from one that is down:
// FailOpen serves only the second unlocked.
func misconfigured(err error) bool {
	return errors.Is(err, zerolock.ErrMisconfigured)
}

// errForeignRecord is the error of a stored result of another transport.
var errForeignRecord = fmt.Errorf("%w: a stored result of another transport", replay.ErrBadRecord)

// Count records an outcome decided before any lock was tried (BadRequest).
func (g *Guard) Count(label string, outcome Outcome) {
	g.Metrics.count(label, outcome)
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
