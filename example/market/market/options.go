package market

import "time"

// Defaults of the options.
const (
	// DefaultMaxRetries is how many times Optimistic retries an aborted
	// transaction before ErrTooManyRetries.
	DefaultMaxRetries = 100
	// DefaultLockWait is how long a Pessimistic operation waits for its
	// locks before ErrLockTimeout.
	DefaultLockWait = 10 * time.Second
	// DefaultLockExpiry is the lifetime of Pessimistic's locks: far longer
	// than an operation (a few round trips), so that only a stalled holder
	// loses its lock.
	DefaultLockExpiry = 10 * time.Second
)

// An Option customizes an Optimistic or a Pessimistic market; each applies
// to the implementation its comment names and is ignored by the other.
type Option func(*options)

type options struct {
	grain      Granularity
	maxRetries int
	lockWait   time.Duration
	lockExpiry time.Duration
}

func defaultOptions() options {
	return options{
		grain:      PerItem,
		maxRetries: DefaultMaxRetries,
		lockWait:   DefaultLockWait,
		lockExpiry: DefaultLockExpiry,
	}
}

func applyOptions(opts []Option) options {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// WithGranularity sets what one operation excludes others from (both
// implementations); the default is PerItem.
func WithGranularity(g Granularity) Option {
	return func(o *options) { o.grain = g }
}

// WithMaxRetries sets how many times Optimistic retries a transaction that
// a conflicting write aborted, after the first attempt; 0 means no retry.
// The default is DefaultMaxRetries; a negative n is taken as 0.
func WithMaxRetries(n int) Option {
	return func(o *options) { o.maxRetries = max(n, 0) }
}

// WithLockWait sets how long a Pessimistic operation waits for its locks
// before ErrLockTimeout; 0 or less waits as long as the context allows. The
// default is DefaultLockWait.
func WithLockWait(d time.Duration) Option {
	return func(o *options) { o.lockWait = d }
}

// WithLockExpiry sets the lifetime of Pessimistic's locks, which must
// outlast the longest operation; the default is DefaultLockExpiry.
// Durations under a millisecond are raised to one.
func WithLockExpiry(d time.Duration) Option {
	return func(o *options) { o.lockExpiry = max(d, time.Millisecond) }
}
