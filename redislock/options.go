package redislock

import "time"

// defaultTolerance is added to the expiry sent to Redis, as go-zero does, so
// that a lock set to expire after n seconds is not lost to clock rounding
// and network delay before n seconds have passed for its holder.
const defaultTolerance = 500 * time.Millisecond

// An Option customizes a RedisLock.
type Option func(*options)

type options struct {
	expiry        time.Duration
	tolerance     time.Duration
	fencing       bool
	wait          waitOptions
	nodeTimeout   time.Duration
	acks          int
	acksTimeout   time.Duration
	setGet        *setGetSupport // shared by a Backend's locks
	deadlineGuard bool
	quietRelease  bool
	name          string // WithName: the lock's label in metrics and traces
}

func defaultOptions() options {
	return options{tolerance: defaultTolerance, wait: defaultWaitOptions()}
}

// WithExpiry sets the initial expiry of the lock with millisecond precision,
// for expiries that SetExpire's whole seconds cannot express. The default is
// go-zero's: 0, so that only the tolerance keeps the key alive.
func WithExpiry(expiry time.Duration) Option {
	return func(o *options) {
		o.expiry = expiry
	}
}

// WithTolerance replaces the 500 ms that is added to the expiry sent to
// Redis. Zero is allowed when the expiry itself is positive.
func WithTolerance(tolerance time.Duration) Option {
	return func(o *options) {
		o.tolerance = tolerance
	}
}

// WithoutWakeups makes Release skip announcing itself to the waiters of
// other instances, and a waiter in another instance then notices the
// release only at its next back-off retry instead of at once. Without it,
// a release announces itself only while a waiter is waiting (a waiting
// acquire's refused try flags the key), so a lock nobody waits for costs
// Redis little more either way: the release script checks the flag. With
// it, a release is the bare compare-and-delete: Valkey 9's DELIFEQ (or
// Redis 8.4's DELEX IFEQ) where the server has it, which spares Redis the
// script (see docs/BENCHMARKS.md), and the script elsewhere. Set it where
// nobody waits on the key: try-lock uses such as duplicate-submission
// guards (the middleware and the interceptor set it on the locks they
// make from a store).
func WithoutWakeups() Option {
	return func(o *options) {
		o.quietRelease = true
	}
}

// WithFencing makes every fresh acquisition mint a fencing token (see
// Fence), in the same script and hash slot as the lock. The counter is a
// companion key that never expires: one small integer per resource name.
// Tokens only increase while Redis keeps its data; a server that restarts
// without persistence starts them again from 1.
func WithFencing() Option {
	return func(o *options) {
		o.fencing = true
	}
}

// WithName sets the name the lock reports itself as in metrics and traces
// (package observe): its "name" label and span attribute. The name is a
// bounded label that says what the lock guards, such as "checkout" or a
// route, never the key: a label per key would give Prometheus a series per
// order or user. Locks without a name report "unnamed". A Backend's locks
// take the name from zerolock.LockerOptions.Name when it is set.
func WithName(name string) Option {
	return func(o *options) {
		o.name = name
	}
}
