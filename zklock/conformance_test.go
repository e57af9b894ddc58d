package zklock_test

import (
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/locktest"
	"github.com/zerolock/zerolock/zklock"
)

// TestConformanceZooKeeper runs the conformance suite on NewBackend over a
// connection to the shared ZooKeeper server. The expiry of an unwatched
// hold is this process's timer, so any expiry is kept exactly. Its Lockers
// have no TTL.
func TestConformanceZooKeeper(t *testing.T) {
	backend := zklock.NewBackend(connect(t))
	locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, locktest.Options{
		Expiry: 300 * time.Millisecond,
		Waiter: true, Watcher: true, Fencer: true,
	})
}
