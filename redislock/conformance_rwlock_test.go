package redislock_test

import (
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/locktest"
	"github.com/zerolock/zerolock/redislock"
)

// rwWriterOptions are what an RWLock's write side claims: a Waiter,
// Watcher and Refresher, with expiry kept to the millisecond, and no TTL.
// It is a Fencer that mints tokens only WithFencing, so only the
// deployment that runs every check with fencing claims it.
var rwWriterOptions = locktest.Options{
	Expiry: 300 * time.Millisecond,
	Waiter: true, Watcher: true, Refresher: true,
}

// rwWriterBackend makes the write sides of RWLocks in one store, made
// WithFencing when the suite asks for LockerOptions.Fencing, as
// NewBackend makes RedisLocks.
type rwWriterBackend struct{ store redislock.Store }

func (b rwWriterBackend) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	opts := []redislock.Option{redislock.WithExpiry(o.Expiry), redislock.WithTolerance(0)}
	if o.Fencing {
		opts = append(opts, redislock.WithFencing())
	}
	return redislock.NewRWLock(b.store, key, opts...).Writer()
}

// runRWConformance runs the conformance suite on the write side of RWLocks
// in store.
func runRWConformance(t *testing.T, store redislock.Store, opts locktest.Options) {
	backend := rwWriterBackend{store}
	locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, opts)
}

// TestConformanceRWLockWriterNode runs the conformance suite on an
// RWLock's write side over a go-redis client to one redis-server.
func TestConformanceRWLockWriterNode(t *testing.T) {
	runRWConformance(t, redistest.Start(t).Client(t), rwWriterOptions)
}

// TestConformanceRWLockWriterNodeGoZero runs the conformance suite on an
// RWLock's write side over go-zero's store of one redis-server.
func TestConformanceRWLockWriterNodeGoZero(t *testing.T) {
	runRWConformance(t, redislock.GoZeroStore(newGoZeroStore(t, redistest.Start(t))), rwWriterOptions)
}

// TestConformanceRWLockWriterCluster runs the conformance suite on an
// RWLock's write side over a go-redis client to the shared Redis Cluster,
// every RWLock made WithFencing: the deployment that claims Fencer.
func TestConformanceRWLockWriterCluster(t *testing.T) {
	opts := rwWriterOptions
	opts.Fencer = true
	runRWConformance(t, redistest.SharedCluster(t).Client(t), opts)
}
