package etcdlock

import (
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerolock/zerolock"
)

// NewBackend returns the Backend of etcd Locks through client, for the
// REST middleware and the gRPC interceptor. Each Locker gets opts, then
// the Expiry and, when not empty, the Name (as WithName) of its
// LockerOptions, so a WithName among opts names the Lockers of rules
// without a name. Its Lockers always mint fencing tokens (the key's create
// revision costs nothing more), so LockerOptions.Fencing is honoured
// whether set or not; they can Watch and report their TTL, so Renew and
// Retry-After work as on Redis.
func NewBackend(client *clientv3.Client, opts ...Option) zerolock.Backend {
	return backend{client: client, opts: opts}
}

type backend struct {
	client *clientv3.Client
	opts   []Option
}

func (b backend) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	opts := make([]Option, 0, len(b.opts)+2)
	opts = append(opts, b.opts...)
	opts = append(opts, WithExpiry(o.Expiry))
	if o.Name != "" {
		opts = append(opts, WithName(o.Name))
	}
	return New(b.client, key, opts...)
}
