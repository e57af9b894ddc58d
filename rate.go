package zerolock

import (
	"context"
	"time"
)

// A RateBackend is a Backend that can count requests against a rate: the
// middleware's and the interceptor's rate mode need one. A Redis store
// backend (redislock.NewBackend) is one; Redlock, etcd and ZooKeeper
// backends are not, and a rate rule on them is refused at start-up.
type RateBackend interface {
	// Rate counts one request of key against quota requests per period,
	// and admits it only if that keeps the count within the quota: an
	// implementation guarantees that no period-long window, on the lock
	// service's clock, holds more than quota admissions of key, and that a
	// key not seen for a period admits quota requests at once. It does not
	// wait: a request over the quota is refused at once, with a
	// RetryAfter. Keys of different quotas or periods must not be mixed;
	// a caller that changes them on a live key gets the new quota
	// counted against the admissions the old one made.
	//
	// An error means the service could not answer: the request may or may
	// not have been counted, and is neither admitted nor refused. A key
	// that holds what no rate count wrote is an error wrapping
	// ErrMisconfigured. When ctx has ended the error satisfies errors.Is
	// with context.Canceled or context.DeadlineExceeded.
	Rate(ctx context.Context, key string, quota int, period time.Duration) (RateResult, error)
}

// RateResult is a RateBackend's answer to one request.
type RateResult struct {
	// Admitted says that the request was counted and may run.
	Admitted bool
	// Remaining is how many more requests of the key would be admitted
	// now, after this one: zero when it was refused, or was the last of
	// the quota.
	Remaining int
	// RetryAfter, when the request was refused, is how long until a
	// request of the key would be admitted, as the service's clock
	// counts it; zero when admitted.
	RetryAfter time.Duration
	// Reset is how long until the key's window is empty again, with its
	// whole quota available, if no request is admitted meanwhile.
	Reset time.Duration
}
