package guard

import (
	"context"
	"errors"
	"fmt"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/ctxdone"
	"github.com/zerolock/zerolock/internal/keyspec"
)

// The outcomes of a rate rule's requests.
const (
	// Admitted: the request was counted within its rule's rate and ran.
	Admitted Outcome = "admitted"
	// RateRefused: the key's Quota was admitted within the last Period, so
	// the request was refused (RateLimited).
	RateRefused Outcome = "rate_refused"
)

// An Admitter is an Exchange that tells its client the state of a rate
// rule's count on admitted requests too (the REST middleware's rate
// headers). Serve calls Admit before Run.
type Admitter interface {
	// Admit is told the count's answer for a request it admitted.
	Admit(r zerolock.RateResult)
}

// errNoRate is the error of a rate count on a backend that is no
// zerolock.RateBackend, which CheckRate refuses at start-up.
var errNoRate = errors.New("guard: rate mode needs a zerolock.RateBackend")

// rateSuffix puts a rate rule's counts in a namespace of their own, as
// limitSuffix does a limit rule's semaphores: a deploy that switches a
// route between modes never finds another kind's value under its key.
const rateSuffix = ":rate"

// serveRate runs one request of a rate rule: one count, no lock. An
// admitted request runs (Unguarded: nothing is held, kept or released); a
// refused one is answered RateLimited with the time until one would be
// admitted. A store that fails is Unavailable, or, with FailOpen, runs the
// request uncounted (logged), as in the other modes; a misconfigured one
// is never served uncounted.
func (g *Guard) serveRate(ctx context.Context, ru *Rule, key string, x Exchange) {
	policy := ru.Policy
	var (
		res zerolock.RateResult
		err error
	)
	if rb, ok := g.Backend.(zerolock.RateBackend); ok {
		res, err = rb.Rate(ctx, key+rateSuffix, policy.Quota, policy.Period)
	} else {
		err = fmt.Errorf("%w (%T is not one)", errNoRate, g.Backend)
	}
	switch {
	case errors.Is(err, errNoRate):
		// CheckRate refused this at start-up: not an outage, never served
		// uncounted.
		logx.WithContext(ctx).Errorf("zerolock: rate count for %s: %v", ru.Label, err)
		g.Metrics.count(ru.Label, StoreError)
		x.Refuse(Refusal{Reason: Unavailable})
	case err != nil && ctxdone.Err(ctx) == nil && g.FailOpen && !misconfigured(err):
		logx.WithContext(ctx).Errorf("zerolock: rate store failed for %s (key …%s), serving uncounted: %v",
			ru.Label, keyspec.Digest(key), err)
		g.Metrics.count(ru.Label, FailedOpen)
		x.Run(withRequest(ctx, key, true), Unguarded)
		x.Deliver()
	case err != nil:
		if ctxdone.Err(ctx) == nil {
			// An ended request is not a store failure worth a log line.
			logx.WithContext(ctx).Errorf("zerolock: rate store failed for %s (key …%s): %v",
				ru.Label, keyspec.Digest(key), err)
		}
		g.Metrics.count(ru.Label, StoreError)
		x.Refuse(Refusal{Reason: Unavailable})
	case !res.Admitted:
		g.Metrics.count(ru.Label, RateRefused)
		x.Refuse(Refusal{Reason: RateLimited, RetryAfter: res.RetryAfter, Rate: res})
	default:
		g.Metrics.count(ru.Label, Admitted)
		if a, ok := x.(Admitter); ok {
			a.Admit(res)
		}
		// The handler's calls carry a key of their own: a later request
		// with the key is new work, not a retry of this one.
		x.Run(withRequest(ctx, key, true), Unguarded)
		x.Deliver()
	}
}
