package redislock_test

import (
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/locktest"
	"github.com/zerolock/zerolock/redislock"
)

// storeOptions are what a NewBackend claims on any Redis deployment:
// every ability, and expiry kept to the millisecond.
var storeOptions = locktest.Options{
	Expiry: 300 * time.Millisecond,
	Waiter: true, TTLer: true, Watcher: true, Fencer: true, Refresher: true,
}

// TestConformanceRedisNode runs the conformance suite on NewBackend over
// a go-redis client to one redis-server.
func TestConformanceRedisNode(t *testing.T) {
	backend := redislock.NewBackend(redistest.Start(t).Client(t))
	locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, storeOptions)
}

// TestConformanceRedisNodeGoZero runs the conformance suite on
// NewBackend over go-zero's store of one redis-server.
func TestConformanceRedisNodeGoZero(t *testing.T) {
	backend := redislock.NewBackend(redislock.GoZeroStore(newGoZeroStore(t, redistest.Start(t))))
	locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, storeOptions)
}

// TestConformanceRedisCluster runs the conformance suite on NewBackend
// over a go-redis client to the shared Redis Cluster.
func TestConformanceRedisCluster(t *testing.T) {
	backend := redislock.NewBackend(redistest.SharedCluster(t).Client(t))
	locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, storeOptions)
}

// TestConformanceRedlock runs the conformance suite on NewRedLockBackend over
// five masters. Its Lockers are plain Lockers. The node timeout is raised
// from its 50 ms default so that a loaded test machine is not taken for
// a lost quorum.
func TestConformanceRedlock(t *testing.T) {
	_, stores, _ := fiveMasters(t)
	backend := redislock.NewRedLockBackend(stores, redislock.WithNodeTimeout(time.Second))
	locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, locktest.Options{
		Expiry: 300 * time.Millisecond,
	})
}
