package redislock

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zerolock/zerolock"
)

// defaultTolerance is added to the expiry sent to Redis, as go-zero does, so
// that a lock set to expire after n seconds is not lost to clock rounding
// and network delay before n seconds have passed for its holder.
const defaultTolerance = 500 * time.Millisecond

// An Option customizes a lock. One Option type serves every constructor
// here, and one rule holds for all of them: an option that a kind of lock
// has no use for is refused, whatever its arguments, with an error wrapping
// ErrOptionNotApplicable that names it. The constructors that return an
// error (NewSemaphore, NewMultiLock, and the NewSemaphore of NewBackend's
// backend) return the refusal; the others (New, NewRedisLock, NewRedLock,
// NewRWLock, and the NewLocker of NewBackend's and NewRedLockBackend's
// backends) return a lock whose every acquire and refresh returns it
// before any I/O, as they return ErrInvalidExpiry for a negative expiry.
//
// The options each kind refuses:
//
//   - RedisLock: WithNodeTimeout (it has no nodes).
//   - RedLock: WithFencing (it has no Fence) and WithBackoff (it has no
//     waiting acquire).
//   - Semaphore: WithFencing (its holders share the key, so no token
//     orders them), WithReplicaAcks (a permit is not made to survive a
//     failover) and WithNodeTimeout.
//   - MultiLock: WithFencing, WithReplicaAcks and WithNodeTimeout.
//   - RWLock: WithReplicaAcks and WithNodeTimeout.
//
// Every kind takes WithExpiry, WithTolerance, WithoutWakeups,
// WithDeadlineGuard (a RedLock returns by its node timeout or its context
// with or without it) and WithName.
type Option func(*options)

// optionSet marks the options that some kind of lock refuses, as given.
type optionSet uint8

const (
	optFencing optionSet = 1 << iota
	optReplicaAcks
	optBackoff
	optNodeTimeout
)

// optionNames are the options of optionSet's bits, in bit order.
var optionNames = [...]string{"WithFencing", "WithReplicaAcks", "WithBackoff", "WithNodeTimeout"}

// The options each kind of lock refuses (see Option).
const (
	mutexRefuses     = optNodeTimeout
	redLockRefuses   = optFencing | optBackoff
	semaphoreRefuses = optFencing | optReplicaAcks | optNodeTimeout
	multiLockRefuses = optFencing | optReplicaAcks | optNodeTimeout
	rwLockRefuses    = optReplicaAcks | optNodeTimeout
)

// refuse returns the refusal of the options o was given that refused
// holds, by kind (a lock kind with its article) on key, or on keys when
// there are several (neither: a backend's, on every key), or nil. The key is quoted only for a refusal: a
// request's lock costs nothing here.
func (o *options) refuse(refused optionSet, kind, key string, keys []string) error {
	bad := o.given & refused
	if bad == 0 {
		return nil
	}
	what := strconv.Quote(key)
	switch {
	case keys != nil:
		what = fmt.Sprintf("%q", keys)
	case key == "":
		what = "every key"
	}
	var names []string
	for i, name := range optionNames {
		if bad&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	verb, pronoun := "does", "it"
	if len(names) > 1 {
		verb, pronoun = "do", "them"
	}
	return &optionError{
		msg: fmt.Sprintf("redislock: %s %s not apply to %s (%s); drop %s from its options, or its backend's",
			strings.Join(names, " and "), verb, kind, what, pronoun),
		acks: bad&optReplicaAcks != 0,
	}
}

// An optionError is a refusal of options (see Option). It matches
// ErrOptionNotApplicable, ErrReplicaAcksUnsupported too when it refuses
// WithReplicaAcks, and zerolock.ErrMisconfigured: a lock that refuses an
// option is set up wrong, so the middleware's FailOpen never serves its
// requests unlocked.
type optionError struct {
	msg  string
	acks bool
}

func (e *optionError) Error() string { return e.msg }

func (e *optionError) Is(target error) bool {
	return target == ErrOptionNotApplicable || target == zerolock.ErrMisconfigured ||
		e.acks && target == ErrReplicaAcksUnsupported
}

type options struct {
	expiry        time.Duration
	tolerance     time.Duration
	fencing       bool
	wait          waitOptions
	nodeTimeout   time.Duration
	acks          int
	acksTimeout   time.Duration
	setGet        *setGetSupport // shared by a Backend's locks
	more          *lockMore      // shared by a Backend's locks without fencing (see moreFor)
	deadlineGuard bool
	quietRelease  bool
	name          string    // WithName: the lock's label in metrics and traces
	given         optionSet // the options given that some kind refuses
}

func defaultOptions() options {
	return options{tolerance: defaultTolerance, wait: defaultWaitOptions()}
}

// applyOptions is the default options with opts applied. Without opts it
// allocates nothing: a struct that an Option is applied to moves to the
// heap, since the Option may keep its pointer (a lock made per request
// with no options would pay for that).
func applyOptions(opts []Option) options {
	if len(opts) == 0 {
		return defaultOptions()
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithExpiry sets the initial expiry of the lock with millisecond precision,
// for expiries that SetExpire's whole seconds cannot express. A Semaphore,
// MultiLock or RWLock keeps it for its lifetime (only a RedisLock and a
// RedLock change theirs, with SetExpire or SetExpiry). The default is
// go-zero's: 0, so that only the tolerance keeps the key alive. A negative
// expiry makes every acquire return ErrInvalidExpiry.
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
// acquire's refused try marks the hold, in the value the release compares
// anyway), so a lock nobody waits for costs Redis nothing more either way.
// With it, the lock's token is one no waiter marks, and a release is the
// bare compare-and-delete: Valkey 9's DELIFEQ (or
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
// without persistence starts them again from 1. RedisLock and RWLock take
// it; RedLock, Semaphore and MultiLock refuse it (see Option).
func WithFencing() Option {
	return func(o *options) {
		o.fencing = true
		o.given |= optFencing
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
