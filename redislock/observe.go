package redislock

import (
	"context"
	"errors"

	"github.com/zerolock/zerolock/internal/ctxdone"
	"github.com/zerolock/zerolock/observe"
)

// The backend and kind labels this package's locks report (package
// observe); a RedLock reports as a whole, its node locks not at all.
const (
	backendRedis   = "redis"
	backendRedLock = "redlock"

	kindMutex       = "mutex"
	kindSemaphore   = "semaphore"
	kindMultiLock   = "multilock"
	kindRWLockRead  = "rwlock-read"
	kindRWLockWrite = "rwlock-write"
)

// tryOutcome is the outcome of a single try: acquired, refused (busy), or
// failed.
func tryOutcome(ok bool, err error) observe.Outcome {
	switch {
	case err != nil:
		return observe.Error
	case ok:
		return observe.Acquired
	}
	return observe.Busy
}

// waitOutcome is the outcome of a waiting acquire on ctx that answered
// ok, err: acquired; timeout when its wait limit passed (also when it cut
// a try short: ErrWaitCutTry), or ctx's deadline did (the caller's own
// limit on the wait, as etcdlock and zklock count it); error when Redis
// failed or ctx was cancelled.
func waitOutcome(ctx context.Context, ok bool, err error) observe.Outcome {
	switch {
	case err != nil && (deadlinePassed(ctx, err) || errors.Is(err, ErrWaitCutTry)):
		return observe.Timeout
	case err != nil:
		return observe.Error
	case ok:
		return observe.Acquired
	}
	return observe.Timeout
}

// deadlinePassed reports whether err, an acquire's error, is ctx's
// deadline passing rather than a failure of Redis or a cancel.
func deadlinePassed(ctx context.Context, err error) bool {
	return ctxdone.Err(ctx) == context.DeadlineExceeded && errors.Is(err, context.DeadlineExceeded)
}

// endWait ends a, the observation of a waiting acquire on ctx that
// answered ok, err, with fence the hold's fencing token (0 for none). A
// wait cut short by ctx's deadline ends as a timeout with no error on its
// span: the caller chose that limit, nothing failed. A try the wait limit
// cut short keeps its error on the span: its outcome is unknown.
func endWait(ctx context.Context, a observe.Acquire, ok bool, err error, fence int64) {
	outcome := waitOutcome(ctx, ok, err)
	if outcome == observe.Timeout && !errors.Is(err, ErrWaitCutTry) {
		err = nil
	}
	a.End(outcome, fence, err)
}
