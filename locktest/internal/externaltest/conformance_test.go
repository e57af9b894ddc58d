package externaltest_test

import (
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/locktest"
)

// TestConformanceMemory runs the suite, from outside zerolock's module,
// on a fresh memory backend per check, claiming every ability the memory
// backend documents.
func TestConformanceMemory(t *testing.T) {
	locktest.Run(t, func(*testing.T) zerolock.Backend {
		return locktest.NewMemoryBackend()
	}, locktest.Options{
		Expiry: 300 * time.Millisecond,
		Waiter: true, TTLer: true, Watcher: true, Refresher: true, Fencer: true,
	})
}
