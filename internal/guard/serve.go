package guard

import (
	"context"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/ctxdone"
	"github.com/zerolock/zerolock/internal/keyspec"
	"github.com/zerolock/zerolock/internal/replay"
)

// Fingerprint identifies the request a stored result answers (replay
// mode): a retry under the same key with another fingerprint is another
// request.
type Fingerprint = [replay.FingerprintSize]byte

// An Exchange is one request as its transport sees it: the hooks Serve
// calls to run the handler and to answer, each in the transport's own
// encoding and statuses. Serve calls either Refuse; or Replay, then Refuse
// if that fails; or Run, then (in window mode) Failed or (in replay mode)
// Answer, then Deliver.
type Exchange interface {
	// Run runs the handler with ctx, as how says. A panic of the handler
	// goes through Run; Serve frees the lock and lets it go on.
	Run(ctx context.Context, how Run)
	// Failed tells, after Run, whether the handler's answer failed in a way
	// that frees a window at once, so that the user's retry is not refused.
	// ended is the request's context's end (nil: still live).
	Failed(ended error) bool
	// Answer is, after Run in replay mode, what is kept of the handler's
	// answer for retries. ended is the handler's context's end (nil: still
	// live; with Renew it also ends when the lock is lost).
	Answer(ended error) Answer
	// Deliver sends the answer Run held, if it held one.
	Deliver()
	// Refuse answers the request with a refusal instead of running it.
	Refuse(r Refusal)
	// Replay answers the request with a stored payload, the Payload of an
	// earlier Answer. It returns an error, having written nothing, when the
	// payload cannot be read (a corrupt value, a later build's format).
	Replay(payload []byte) error
}

// Run says how the handler runs.
type Run int

// The ways a handler runs.
const (
	// Unguarded: no lock is held (FailOpen serves the request without
	// one, or a rate rule admitted it); nothing is asked of the answer.
	Unguarded Run = iota
	// Guarded: the handler runs under the lock, which is kept or freed
	// when it returns; in window mode Failed is asked next.
	Guarded
	// Held: replay mode; the answer is stored before the client sees it,
	// so the transport holds it until Deliver, and Answer is asked next.
	Held
)

// An Answer is what replay mode keeps of a handler's answer.
type Answer struct {
	// Keep stores the answer in place of the lock for the rule's Retain;
	// otherwise the lock is freed and a retry runs again (a 5xx, a failure
	// of the server rather than an answer to the request).
	Keep bool
	// Payload is the transport's encoding of the answer, replayed to
	// retries.
	Payload []byte
	// Unreplayable, when Keep is set, says why the answer cannot be
	// replayed and what fixes that, in place of a Payload: its retries are
	// refused until Retain passes, since running them again would repeat
	// the work.
	Unreplayable string
	// Problem says, when Keep is false, why an answer that should have been
	// kept could not be (logged); nil for an answer not meant to be kept.
	Problem error
}

// Refusal is a request answered without running its handler.
type Refusal struct {
	Reason Reason
	// RetryAfter is when a retry may succeed: the holder's remaining time
	// (Duplicate), the next permit's expiry (OverLimit), the time until a
	// request of the key would be admitted (RateLimited), the stored
	// result's remaining time (NotKept, Unreadable); zero for the others.
	RetryAfter time.Duration
	// Rate is the rate count's answer (RateLimited), for the transport's
	// rate headers.
	Rate zerolock.RateResult
}

// Reason is why a request was refused.
type Reason int

// The reasons.
const (
	// Unavailable: the lock store failed (or the request ended while it was
	// asked) and FailOpen does not apply.
	Unavailable Reason = iota + 1
	// Duplicate: the same request is being handled (or, in window mode,
	// was handled within Expire).
	Duplicate
	// OverLimit: in limit mode, the key already runs its Permits requests.
	OverLimit
	// KeyReused: in replay mode, the key holds the result of a request with
	// another fingerprint.
	KeyReused
	// NotKept: in replay mode, the first request's answer could not be
	// kept for replay, so its retries are refused until Retain passes.
	NotKept
	// Unreadable: in replay mode, the stored result cannot be read (a
	// corrupt value, a later build's format); refused until it expires.
	Unreadable
	// RateLimited: in rate mode, the key's Quota was admitted within the
	// last Period.
	RateLimited
)

// Serve runs one request under its rule: it takes the request's lock,
// then either refuses the request, answers it with a stored result, or runs
// its handler and keeps or frees the lock (or stores the answer in its
// place) as the rule's mode says, counting the outcome. A rate rule takes
// no lock: its request is counted against the rate, then run or refused
// (see serveRate). ctx is the
// request's; key comes from ru.Key; fp matters in replay mode only.
func (g *Guard) Serve(ctx context.Context, ru *Rule, key string, fp Fingerprint, x Exchange) {
	policy := ru.Policy
	if policy.Quota > 0 {
		g.serveRate(ctx, ru, key, x)
		return
	}
	res := g.Acquire(ctx, ru.Label, key, policy)
	switch res.Outcome {
	case StoreError:
		x.Refuse(Refusal{Reason: Unavailable})
		return
	case Rejected:
		x.Refuse(Refusal{Reason: Duplicate, RetryAfter: res.RetryAfter})
		return
	case Limited:
		x.Refuse(Refusal{Reason: OverLimit, RetryAfter: res.RetryAfter})
		return
	case FailedOpen:
		x.Run(withRequest(ctx, key, !policy.Replay), Unguarded)
		x.Deliver()
		return
	case Stored:
		g.serveStored(ctx, ru, key, fp, res, x)
		return
	}

	returned := false
	defer func() {
		if !returned {
			// A panic: the lock is freed, nothing is stored, and the retry
			// runs again.
			res.Lease.End(ctx, false)
		}
	}()
	// The handler's context carries the request's key for the calls it
	// makes (RequestFrom): as it is in replay mode, the only mode in which
	// a request with the key again is a retry of this one; made the
	// request's own in the others (see withRequest).
	handlerCtx := withRequest(res.Ctx, key, !policy.Replay)
	if policy.Replay {
		x.Run(handlerCtx, Held)
		returned = true
		g.record(ctx, ru, key, fp, res, x)
		return
	}
	x.Run(handlerCtx, Guarded)
	returned = true
	res.Lease.End(ctx, policy.KeepAfter(true, policy.Window && x.Failed(ctxdone.Err(ctx))))
	x.Deliver()
}

// record stores the answer of a replay-mode request in place of its lock
// before the client sees it, so that a retry sent the moment it arrives is
// replayed, then delivers it. An answer that is not kept frees the lock
// first, so the client's retry runs at once. A store that fails, or finds
// the lock lost (the handler outlived Expire), is logged by the lease, and
// the client still gets the handler's answer.
func (g *Guard) record(ctx context.Context, ru *Rule, key string, fp Fingerprint, res Result, x Exchange) {
	a := x.Answer(ctxdone.Err(res.Ctx))
	if !a.Keep {
		if a.Problem != nil {
			logx.WithContext(ctx).Errorf("zerolock: the result of %s (key …%s) cannot be kept, so a retry runs again: %v",
				ru.Label, keyspec.Digest(key), a.Problem)
		}
		res.Lease.End(ctx, false)
		x.Deliver()
		return
	}
	rec := replay.Record{Kind: g.RecordKind, Fingerprint: fp, Payload: a.Payload}
	if a.Unreplayable != "" {
		rec.Payload, rec.Unreplayable = nil, true
		logx.WithContext(ctx).Errorf("zerolock: the result of %s (key …%s) is not kept for replay (%s): "+
			"its retries are refused until Retain (%v) passes", ru.Label, keyspec.Digest(key), a.Unreplayable, ru.Policy.Retain)
	}
	// The client may have left; the result is kept all the same (Record
	// does not end with the request's context).
	res.Lease.Record(ctx, replay.Encode(rec))
	x.Deliver()
}

// serveStored answers a request whose key holds a stored result: with it
// when the fingerprints match; KeyReused when the key was used for another
// request; NotKept when the first answer could not be kept; Unreadable,
// logged, when the record cannot be read. An unreadable record is left
// alone: it may be a later build's, during a rolling deploy, and it
// expires with Retain.
func (g *Guard) serveStored(ctx context.Context, ru *Rule, key string, fp Fingerprint, res Result, x Exchange) {
	rec, err := replay.Decode(res.Record, g.MaxRecord)
	if err == nil && rec.Kind != g.RecordKind {
		err = errForeignRecord
	}
	switch {
	case err != nil:
	case rec.Fingerprint != fp:
		g.Metrics.count(ru.Label, Mismatch)
		x.Refuse(Refusal{Reason: KeyReused})
		return
	case rec.Unreplayable:
		g.Metrics.count(ru.Label, Rejected)
		x.Refuse(Refusal{Reason: NotKept, RetryAfter: retryAfter(ctx, res.lock, ru.Policy.Retain)})
		return
	default:
		if err = x.Replay(rec.Payload); err == nil {
			g.Metrics.count(ru.Label, Replayed)
			return
		}
	}
	g.Metrics.count(ru.Label, StoreError)
	logx.WithContext(ctx).Errorf("zerolock: the stored result of %s (key …%s) cannot be read, "+
		"so its retries are refused until it expires: %v", ru.Label, keyspec.Digest(key), err)
	x.Refuse(Refusal{Reason: Unreadable, RetryAfter: retryAfter(ctx, res.lock, ru.Policy.Retain)})
}
