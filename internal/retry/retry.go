// Package retry is the schedule of the client half's retries, written once
// for the gRPC client interceptor and the HTTP transport: how long to wait
// before the next attempt, and whether the caller's deadline leaves room
// for it.
package retry

import (
	"context"
	"math/rand/v2"
	"time"
)

// MaxWait bounds the wait between two attempts: the back-off's doubling
// stops at it, and a server that asks for longer is answering, not
// throttling, so its refusal is the call's answer.
const MaxWait = time.Minute

// Backoff returns the wait after the n-th attempt (n from 1): base, then
// doubled each time up to MaxWait, spread by ±20% so that callers that
// failed together do not retry together.
func Backoff(base time.Duration, n int) time.Duration {
	return backoff(base, n, rand.Float64())
}

// backoff is Backoff with its jitter, a number in [0, 1), given.
func backoff(base time.Duration, n int, jitter float64) time.Duration {
	d := base
	for i := 1; i < n && d < MaxWait; i++ {
		d *= 2
	}
	d = min(d, MaxWait)
	return time.Duration(float64(d) * (0.8 + 0.4*jitter))
}

// Pause waits d before the next attempt and reports whether to make it:
// not if ctx ends first, nor if its deadline falls within the wait, which
// would leave the attempt no time at all.
func Pause(ctx context.Context, d time.Duration) bool {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= d {
		return false
	}
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}
