package redislock

import "github.com/zerolock/zerolock/observe"

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

// waitOutcome is the outcome of a waiting acquire: acquired, its wait
// limit passed (timeout), or failed (the context ended, or Redis).
func waitOutcome(ok bool, err error) observe.Outcome {
	switch {
	case err != nil:
		return observe.Error
	case ok:
		return observe.Acquired
	}
	return observe.Timeout
}
