package etcdlock

import "errors"

var (
	// ErrInvalidExpiry is returned by the acquire methods when the expiry
	// is negative.
	ErrInvalidExpiry = errors.New("etcdlock: expiry must not be negative")

	// ErrNoLease is returned by TTL when the holder's key in etcd has no
	// lease, which a lock never leaves behind: another writer put the key.
	ErrNoLease = errors.New("etcdlock: the holder's key has no lease")
)
