package interceptor

import (
	"context"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/internal/retry"
)

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
			return answer(err)
		}
		wait, ok := retryWait(err, cut, retry.Backoff(cl.conf.Backoff, attempt))
		if !ok || !retry.Pause(ctx, wait) {
			return answer(err)
		}
	}
}

// answer is the error a logical call returns for its last attempt's err:
// a duplicate refusal of the server called loses its RetryInfo and mode
// (withoutDuplicate), which speak of that server's hold, not of the
// caller's request, so that a handler that returns it as it is does not
// invite its own callers to retry the whole request.
func answer(err error) error {
	err, _ = withoutDuplicate(err)
	return err
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
// and after how long: backoff for Unavailable and an attempt AttemptTimeout
// cut, the delay of a RetryInfo the refusal carries, except for the
// interceptor's own refusal of a duplicate (duplicate.go), which is
// retried in replay mode only, after backoff at most. Any other failure
// is the call's answer, and so is a RetryInfo delay over retry.MaxWait, which
// no call should wait for.
func retryWait(err error, cut bool, backoff time.Duration) (time.Duration, bool) {
	if cut {
		return backoff, true
	}
	st, ok := status.FromError(err)
	if !ok {
		return 0, false
	}
	delay, hasInfo := retryDelay(st)
	if mode, ok := duplicateMode(st); ok {
		if mode != ModeReplay {
			// The running call is this call's earlier attempt, or another
			// call with its key: in inflight mode a retry made once it
			// ended would run the method again, and in window mode it is
			// refused until the window ends.
			return 0, false
		}
		// Its result is replayed as soon as the first call ends, which the
		// delay (the time the first call's hold has left) bounds but
		// rarely meets: poll with the back-off instead of waiting it out.
		if hasInfo && delay >= 0 {
			return min(backoff, delay), true
		}
		return backoff, true
	}
	if hasInfo {
		if delay < 0 {
			return backoff, true
		}
		// A server that asks for longer than retry.MaxWait (a result that
		// could not be kept, refused until its Retain passes) is not
		// waited for: that is the call's answer.
		return delay, delay <= retry.MaxWait
	}
	return backoff, st.Code() == codes.Unavailable
}

// retryDelay returns the delay of the RetryInfo st carries, if any: -1
// for one without a delay, 0 or more otherwise.
func retryDelay(st *status.Status) (time.Duration, bool) {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.RetryInfo); ok {
			if info.GetRetryDelay() == nil {
				return -1, true
			}
			return max(info.GetRetryDelay().AsDuration(), 0), true
		}
	}
	return 0, false
}
