package etcdlock_test

import (
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
	"github.com/zerolock/zerolock/locktest"
)

// TestConformanceEtcd runs the conformance suite on NewBackend over the
// shared etcd server. Its leases count whole seconds, at least one (the
// test server's 500 ms election timeout puts etcd's own minimum below
// that), and etcd revokes expired leases on a 500 ms tick.
func TestConformanceEtcd(t *testing.T) {
	backend := etcdlock.NewBackend(etcdtest.Shared(t).Client(t))
	locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, locktest.Options{
		Expiry:     time.Second,
		ExpiryUnit: time.Second,
		ExpiryLag:  time.Second,
		Waiter:     true, TTLer: true, Watcher: true, Fencer: true,
	})
}
