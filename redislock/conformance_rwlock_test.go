package redislock_test

import (
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/locktest"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// rwWriterOptions are what an RWLock's write side claims: a Waiter,
// Watcher, Fencer (it always fences) and Refresher, with expiry kept to
// the millisecond, and no TTL.
var rwWriterOptions = locktest.Options{
	Expiry: 300 * time.Millisecond,
	Waiter: true, Watcher: true, Fencer: true, Refresher: true,
}

// rwWriterBackend makes the write sides of RWLocks in one store.
type rwWriterBackend struct{ store redislock.Store }

func (b rwWriterBackend) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	return redislock.NewRWLock(b.store, key, redislock.WithExpiry(o.Expiry), redislock.WithTolerance(0)).Writer()
}

// runRWConformance runs the conformance suite on the write side of RWLocks
// in store.
func runRWConformance(t *testing.T, store redislock.Store) {
	backend := rwWriterBackend{store}
	locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, rwWriterOptions)
}

// TestConformanceRWLockWriterNode runs the conformance suite on an
// RWLock's write side over a go-redis client to one redis-server.
func TestConformanceRWLockWriterNode(t *testing.T) {
	runRWConformance(t, redistest.Start(t).Client(t))
}

// TestConformanceRWLockWriterNodeGoZero runs the conformance suite on an
// RWLock's write side over go-zero's store of one redis-server.
func TestConformanceRWLockWriterNodeGoZero(t *testing.T) {
	runRWConformance(t, redislock.GoZeroStore(newGoZeroStore(t, redistest.Start(t))))
}

// TestConformanceRWLockWriterCluster runs the conformance suite on an
// RWLock's write side over a go-redis client to the shared Redis Cluster.
func TestConformanceRWLockWriterCluster(t *testing.T) {
	runRWConformance(t, redistest.SharedCluster(t).Client(t))
}
