package etcdlock

import "time"

// An Option customizes a Lock.
type Option func(*options)

type options struct {
	expiry time.Duration
	prefix string
	name   string
}

// WithExpiry sets how long an acquired lock lives unless it is released or
// watched. etcd counts leases in whole seconds, so the lease of each
// acquisition has a TTL of expiry rounded up to whole seconds, and at least
// one second; etcd itself raises a TTL below its own minimum (one and a
// half election timeouts, 2 s with etcd's default flags) to that minimum.
//
// The default is redislock's, 0, which gives the one-second minimum lease
// (a RedisLock's default lifetime is its 500 ms tolerance). A negative
// expiry makes the acquire methods return ErrInvalidExpiry.
func WithExpiry(expiry time.Duration) Option {
	return func(o *options) {
		o.expiry = expiry
	}
}

// WithPrefix puts the lock's keys under prefix in etcd: the lock on key is
// the etcd prefix prefix+key, under which each holder and waiter writes
// prefix+key+"/"+its lease ID in hex. The default is no prefix, so the key
// is used as it is, as redislock does.
func WithPrefix(prefix string) Option {
	return func(o *options) {
		o.prefix = prefix
	}
}

// WithName sets what the lock reports itself as in metrics and traces
// (package observe): a bounded label, such as "checkout" or a route, never
// the key, since every distinct name is a series of its own. The default
// is "unnamed" (lockobs.Unnamed).
func WithName(name string) Option {
	return func(o *options) {
		o.name = name
	}
}

// leaseTTL is the lease TTL, in whole seconds, that expiry asks for.
func leaseTTL(expiry time.Duration) (int, error) {
	if expiry < 0 {
		return 0, ErrInvalidExpiry
	}
	seconds := (expiry + time.Second - 1) / time.Second
	return max(int(seconds), 1), nil
}
