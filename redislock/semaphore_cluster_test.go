package redislock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestSemaphoreCluster runs the semaphore's checks on the shared Redis
// Cluster, with a go-redis *ClusterClient and go-zero's cluster store: the
// N-holder invariant, a permit's own expiry, a SIGKILLed holder's permit,
// and waiters woken by the release's shard-channel message.
func TestSemaphoreCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	addrs := strings.Join(c.Addrs(), ",")
	for _, b := range clusterBackends(t, c) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("NeverMoreThanN", func(t *testing.T) { checkNeverMoreThanN(t, b) })
			t.Run("OwnExpiry", func(t *testing.T) { checkOwnExpiry(t, b) })
			t.Run("KilledHolder", func(t *testing.T) { checkKilledHolder(t, b, addrs) })
			t.Run("WokenWaiters", func(t *testing.T) { checkWokenWaiters(t, b) })
		})
	}
}

// TestSemaphoreClusterNoCrossSlot: 1,000 fuzzed names per store, each
// semaphore taken, refreshed, read (TTL, Holders), watched and released
// with its wake-up (a shard-channel publish in the script): none is
// refused with CROSSSLOT or any other error.
func TestSemaphoreClusterNoCrossSlot(t *testing.T) {
	c := redistest.SharedCluster(t)
	ctx := context.Background()
	for _, b := range clusterBackends(t, c) {
		t.Run(b.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(2, uint64(len(b.name))))
			for i := range 1000 {
				name := fmt.Sprintf("%s%d", fuzzName(r), i%3)
				s, err := redislock.NewSemaphore(b.store(), name, 2, redislock.WithExpiry(5*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				if ok, err := s.AcquireCtx(ctx); !ok || err != nil {
					t.Fatalf("name %q: AcquireCtx = %v, %v", name, ok, err)
				}
				if ok, err := s.RefreshCtx(ctx); !ok || err != nil {
					t.Fatalf("name %q: RefreshCtx = %v, %v", name, ok, err)
				}
				if n, err := redislock.SemaphoreHolders(ctx, s); n != 1 || err != nil {
					t.Fatalf("name %q: Holders = %v, %v", name, n, err)
				}
				if _, err := s.TTL(ctx); err != nil {
					t.Fatalf("name %q: TTL: %v", name, err)
				}
				if i%100 == 0 {
					watched := s.Watch(ctx, zerolock.RenewEvery(time.Second))
					if watched.Err() != nil {
						t.Fatalf("name %q: Watch ended at once: %v", name, context.Cause(watched))
					}
				}
				if ok, err := s.ReleaseCtx(ctx); !ok || err != nil {
					t.Fatalf("name %q: ReleaseCtx = %v, %v", name, ok, err)
				}
			}
		})
	}
}
