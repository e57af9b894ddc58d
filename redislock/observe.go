package redislock

import (
	"context"

	"github.com/zerolock/zerolock/observe/lockobs"
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
// failed (lockobs.TryOutcome, under the name the lock files call).
func tryOutcome(ok bool, err error) lockobs.Outcome { return lockobs.TryOutcome(ok, err) }

// waitErrors are this package's errors that a waiting acquire's outcome
// reads: a try the wait limit cut short (ErrWaitCutTry) is a timeout that
// keeps its error on the span, since its outcome is unknown.
var waitErrors = lockobs.WaitErrors{CutTry: ErrWaitCutTry}

// endWait ends a, the observation of a waiting acquire on ctx that
// answered ok, err, with fence the hold's fencing token (0 for none):
// lockobs.EndWait with this package's waitErrors, which counts a wait
// that ctx's deadline cut short as a timeout, as etcdlock and zklock do.
func endWait(ctx context.Context, a lockobs.Acquire, ok bool, err error, fence int64) {
	a.EndWait(ctx, ok, err, fence, waitErrors)
}
