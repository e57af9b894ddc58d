package redislock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// eachClusterBackend runs f once per cluster backend, each with its own
// key.
func eachClusterBackend(t *testing.T, f func(t *testing.T, b backend, key string)) {
	t.Helper()
	for _, b := range clusterBackends(t, redistest.SharedCluster(t)) {
		t.Run(b.name, func(t *testing.T) {
			f(t, b, "zerolock-test:"+t.Name())
		})
	}
}

// TestRWLockClusterExclusion is TestRWLockExclusion on the Cluster, with
// go-redis's ClusterClient and go-zero's cluster store.
func TestRWLockClusterExclusion(t *testing.T) {
	eachClusterBackend(t, func(t *testing.T, b backend, key string) {
		w := runRWExclusion(t, func() *redislock.RWLock { return newRW(b, key) }, 10, 700*time.Millisecond)
		t.Logf("%d reads, %d writes, %d refused, up to %d readers at once", w.reads, w.writes, w.refused, w.maxReaders)
	})
}

// TestRWLockClusterWaiting runs the checks of waiting, writer preference,
// fencing (WithFencing, and no counter without it) and Watch on the
// Cluster: the release announcements are shard channels in the key's slot.
func TestRWLockClusterWaiting(t *testing.T) {
	admin := redistest.SharedCluster(t).Client(t)
	for _, c := range []struct {
		name  string
		check func(*testing.T, backend, string)
	}{
		{"WokenWaiters", func(t *testing.T, b backend, key string) { checkRWWokenWaiters(t, b, admin, key) }},
		{"WriterPreference", func(t *testing.T, b backend, key string) { checkRWWriterPreference(t, b, admin, key) }},
		{"WriterGivesUp", func(t *testing.T, b backend, key string) { checkRWWriterGivesUp(t, b, admin, key) }},
		{"Fence", func(t *testing.T, b backend, key string) {
			checkRWNoFence(t, b, admin, key+":plain")
			checkRWFence(t, b, admin, key)
		}},
		{"Watch", func(t *testing.T, b backend, key string) { checkRWWatch(t, b, admin, key) }},
	} {
		t.Run(c.name, func(t *testing.T) { eachClusterBackend(t, c.check) })
	}
}

// TestRWLockClusterNoCrossSlot: 600 fuzzed resource names (hash tags,
// braces, empty), each through every script (both sides, a waiting
// writer's intent and its abandonment, both releases, refresh), every
// other name WithFencing: none is refused with CROSSSLOT.
func TestRWLockClusterNoCrossSlot(t *testing.T) {
	eachClusterBackend(t, func(t *testing.T, b backend, _ string) {
		ctx := context.Background()
		r := rand.New(rand.NewPCG(19, uint64(len(b.name))))
		for i := range 300 {
			name := fmt.Sprintf("%s%d", fuzzName(r), i%3)
			var opts []redislock.Option
			if i%2 == 0 {
				opts = append(opts, redislock.WithFencing())
			}
			reader, writer := newRW(b, name, opts...), newRW(b, name, opts...)
			steps := []struct {
				what   string
				call   func(context.Context) (bool, error)
				wantOK bool
			}{
				{"RLock", reader.RLockCtx, true},
				{"Refresh of the share", reader.RefreshCtx, true},
				{"LockWait(1ms) beside the reader", func(ctx context.Context) (bool, error) { return writer.LockWaitCtx(ctx, time.Millisecond) }, false},
				{"RUnlock", reader.RUnlockCtx, true},
				{"Lock", writer.LockCtx, true},
				{"Refresh of the write side", writer.RefreshCtx, true},
				{"Unlock", writer.UnlockCtx, true},
			}
			for _, s := range steps {
				if ok, err := s.call(ctx); ok != s.wantOK || err != nil {
					t.Fatalf("name %q: %s = %v, %v; want %v, nil", name, s.what, ok, err, s.wantOK)
				}
			}
		}
	})
}
