package lockobs

import (
	"context"
	"errors"
	"time"
)

// TryOutcome is the outcome of a try, an acquire that does not wait, that
// answered ok, err: Acquired, Busy when another holder has the lock, or
// Error when the lock service failed or the context ended.
func TryOutcome(ok bool, err error) Outcome {
	switch {
	case err != nil:
		return Error
	case ok:
		return Acquired
	}
	return Busy
}

// WaitErrors names the errors of a backend that EndWait cannot classify
// from the context alone. The zero value names none.
type WaitErrors struct {
	// CutTry is the backend's error for a wait whose limit ended a try in
	// flight, whose outcome is unknown (redislock.ErrWaitCutTry): such a
	// wait is a Timeout whose error stays on the span.
	CutTry error
	// Failed wraps every error of the lock service itself
	// (zklock.ErrZooKeeper): such an error is an Error even when it also
	// wraps the context's deadline, which passed while the service failed.
	Failed error
}

// EndWait ends a, the observation of a waiting acquire on ctx that
// answered ok, err, with fence the hold's fencing token (0 for none), as
// End does with the outcome that ok, err and ctx give:
//
//   - Acquired when ok;
//   - Timeout when the wait limit passed (false, nil), and when ctx's
//     deadline did (err wraps context.DeadlineExceeded and the deadline
//     has passed, even if ctx's timer has not fired yet): the caller's
//     own limit on the wait, as its wait limit is. The span then has no
//     error: nothing failed. An err that wraps e.Failed stays an Error;
//   - Timeout, with err on the span, when err wraps e.CutTry;
//   - Error otherwise: the lock service failed, or ctx was cancelled.
func (a Acquire) EndWait(ctx context.Context, ok bool, err error, fence int64, e WaitErrors) {
	outcome, err := waitOutcome(ctx, ok, err, e)
	a.End(outcome, fence, err)
}

// waitOutcome is EndWait's outcome, and the error its span records.
func waitOutcome(ctx context.Context, ok bool, err error, e WaitErrors) (Outcome, error) {
	switch {
	case err == nil && ok:
		return Acquired, nil
	case err == nil:
		return Timeout, nil
	case e.CutTry != nil && errors.Is(err, e.CutTry):
		return Timeout, err
	case deadlinePassed(ctx, err) && (e.Failed == nil || !errors.Is(err, e.Failed)):
		return Timeout, nil
	}
	return Error, err
}

// deadlinePassed reports whether err, an acquire's error, is ctx's
// deadline passing rather than a failure or a cancel. It counts from the
// moment the deadline passes, before ctx's timer fires and sets ctx.Err():
// a client that puts the deadline on its socket (go-redis with
// ContextTimeoutEnabled) can answer "i/o timeout" first.
func deadlinePassed(ctx context.Context, err error) bool {
	if !errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	switch ctx.Err() {
	case context.DeadlineExceeded:
		return true
	case nil:
		d, ok := ctx.Deadline()
		return ok && !time.Now().Before(d)
	}
	return false
}
