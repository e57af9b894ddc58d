package redislock_test

import (
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/locktest"
	"github.com/zerolock/zerolock/redislock"
)

// semaphoreOptions are what a one-permit semaphore claims: a Locker with
// every ability but fencing, expiry kept to the millisecond.
var semaphoreOptions = locktest.Options{
	Expiry: 300 * time.Millisecond,
	Waiter: true, TTLer: true, Watcher: true, Refresher: true,
}

// onePermit is a Backend whose Lockers are one-permit semaphores of a
// NewBackend: a semaphore of one must keep the whole lock contract.
type onePermit struct {
	t       *testing.T
	backend zerolock.SemaphoreBackend
}

func (b onePermit) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	l, err := b.backend.NewSemaphore(key, 1, o)
	if err != nil {
		b.t.Fatalf("NewSemaphore(%q, 1) = %v", key, err)
	}
	return l
}

// runSemaphoreConformance runs the conformance suite on one-permit
// semaphores of a NewBackend over store.
func runSemaphoreConformance(t *testing.T, store redislock.Store) {
	t.Helper()
	backend := redislock.NewBackend(store).(zerolock.SemaphoreBackend)
	locktest.Run(t, func(t *testing.T) zerolock.Backend { return onePermit{t, backend} }, semaphoreOptions)
}

// TestConformanceSemaphoreNode: one-permit semaphores over a go-redis
// client to one redis-server.
func TestConformanceSemaphoreNode(t *testing.T) {
	runSemaphoreConformance(t, redistest.Start(t).Client(t))
}

// TestConformanceSemaphoreNodeGoZero: one-permit semaphores over go-zero's
// store of one redis-server.
func TestConformanceSemaphoreNodeGoZero(t *testing.T) {
	runSemaphoreConformance(t, redislock.GoZeroStore(newGoZeroStore(t, redistest.Start(t))))
}

// TestConformanceSemaphoreCluster: one-permit semaphores over a go-redis
// client to the shared Redis Cluster.
func TestConformanceSemaphoreCluster(t *testing.T) {
	runSemaphoreConformance(t, redistest.SharedCluster(t).Client(t))
}
