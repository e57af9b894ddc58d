package interceptor

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maxBackoff bounds the doubling of the wait between attempts, so that a
// large MaxAttempts never makes a wait overflow or outlast any sensible
// deadline.
const maxBackoff = time.Minute

// client is the interceptor UnaryClientInterceptor returns.
type client struct {
	conf    ClientConf
	methods map[string]bool
}

// intercept runs one logical call: a key made once, then attempts until
// one succeeds, one fails in a way that must not be retried, MaxAttempts
// is reached, or the caller's deadline leaves no room for another.
func (cl *client) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn,
	invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !cl.methods[method] {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	ctx = withCallKey(ctx, method)
	for attempt := 1; ; attempt++ {
		cut, err := cl.attempt(ctx, func(ctx context.Context) error {
			return invoker(ctx, method, req, reply, cc, opts...)
		})
		if err == nil || attempt >= cl.conf.MaxAttempts {
			return err
		}
		wait, ok := retryWait(err, cut, backoffWait(cl.conf.Backoff, attempt, rand.Float64()))
		if !ok || !pause(ctx, wait) {
			return err
		}
	}
}

// attempt makes one attempt, bounded by AttemptTimeout if set, and
// reports whether AttemptTimeout (not the caller's deadline, nor the
// server's own DeadlineExceeded) cut it. The attempt's deadline having
// passed is the test, not its context's error: the server, which gets the
// deadline with the call, may end the stream at it before the client's
// own timer fires.
func (cl *client) attempt(ctx context.Context, call func(context.Context) error) (cut bool, err error) {
	if cl.conf.AttemptTimeout <= 0 {
		return false, call(ctx)
	}
	attemptCtx, cancel := context.WithTimeout(ctx, cl.conf.AttemptTimeout)
	defer cancel()
	deadline, _ := attemptCtx.Deadline()
	callerDeadline, bounded := ctx.Deadline()
	own := !bounded || deadline.Before(callerDeadline)
	err = call(attemptCtx)
	cut = own && status.Code(err) == codes.DeadlineExceeded && ctx.Err() == nil && !time.Now().Before(deadline)
	return cut, err
}

// retryWait says whether an attempt that failed with err may be retried,
// and after how long: the delay of a RetryInfo the refusal carries, or
// backoff for Unavailable and an attempt AttemptTimeout cut. Any other
// failure is the call's answer, and so is a RetryInfo delay over
// maxBackoff, which no call should wait for.
func retryWait(err error, cut bool, backoff time.Duration) (time.Duration, bool) {
	if cut {
		return backoff, true
	}
	st, ok := status.FromError(err)
	if !ok {
		return 0, false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.RetryInfo); ok {
			if info.GetRetryDelay() == nil {
				return backoff, true
			}
			d := max(info.GetRetryDelay().AsDuration(), 0)
			// A server that asks for longer than maxBackoff (a result that
			// could not be kept, refused until its Retain passes) is not
			// waited for: that is the call's answer.
			return d, d <= maxBackoff
		}
	}
	return backoff, st.Code() == codes.Unavailable
}

// backoffWait is the wait after the n-th attempt: base after the first,
// then doubled each time (up to maxBackoff) and spread by ±20% with
// jitter, a number in [0, 1), so that callers that failed together do not
// retry together.
func backoffWait(base time.Duration, n int, jitter float64) time.Duration {
	if n <= 1 {
		return base
	}
	d := base
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	d = min(d, maxBackoff)
	return time.Duration(float64(d) * (0.8 + 0.4*jitter))
}

// pause waits d before the next attempt and reports whether to make it:
// not if ctx ends first, nor if its deadline falls within the wait, which
// would leave the attempt no time at all.
func pause(ctx context.Context, d time.Duration) bool {
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
