package zklock

import (
	"github.com/go-zookeeper/zk"

	"github.com/zerolock/zerolock"
)

// NewBackend returns the zerolock.Backend of Locks over conn, for the
// middleware and the interceptor. Each Locker gets opts, then the
// LockerOptions' Expiry and, when not empty, its Name (as WithName), so a
// WithName among opts names the Lockers of rules without a name. Fencing
// needs nothing, since every Lock's Fence is its node's sequence number.
// Its Lockers have no TTL: Retry-After is the rule's expiry.
func NewBackend(conn *zk.Conn, opts ...Option) zerolock.Backend {
	return backend{conn: conn, opts: opts}
}

type backend struct {
	conn *zk.Conn
	opts []Option
}

func (b backend) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	opts := append(append(make([]Option, 0, len(b.opts)+2), b.opts...), WithExpiry(o.Expiry))
	if o.Name != "" {
		opts = append(opts, WithName(o.Name))
	}
	return New(b.conn, key, opts...)
}

var (
	_ zerolock.Locker = (*Lock)(nil)
	_ zerolock.Waiter = (*Lock)(nil)
)
