package etcdlock_test

import (
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
)

// TestMutualExclusion runs 3 clients x 10 goroutines, each taking the same
// lock 10 times with the waiting acquire and doing a read-sleep-write of a
// counter in memory while holding it: no update is lost and no two holds
// overlap.
func TestMutualExclusion(t *testing.T) {
	srv := etcdtest.Shared(t)
	const clients, perClient, rounds = 3, 10, 10
	key := testKey(t)
	ctx := testCtx(t)

	var (
		counter  atomic.Int64 // atomic for the race detector only: the lock is what must serialize
		inside   atomic.Int32
		acquired atomic.Int64
		mu       sync.Mutex
		holds    [][2]time.Time
		wg       sync.WaitGroup
	)
	for c := 0; c < clients; c++ {
		client := srv.Client(t)
		for g := 0; g < perClient; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lock := etcdlock.New(client, key, etcdlock.WithExpiry(10*time.Second))
				for r := 0; r < rounds; r++ {
					ok, err := lock.AcquireWaitCtx(ctx, 0)
					if err != nil || !ok {
						t.Errorf("acquire: %v, %v", ok, err)
						return
					}
					start := time.Now()
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d holders at once", n)
					}
					v := counter.Load()
					time.Sleep(rand.N(time.Millisecond)) // the work, widening the window for a lost update
					counter.Store(v + 1)
					inside.Add(-1)
					end := time.Now()
					acquired.Add(1)
					mu.Lock()
					holds = append(holds, [2]time.Time{start, end})
					mu.Unlock()
					if ok, err := lock.ReleaseCtx(ctx); err != nil || !ok {
						t.Errorf("release: %v, %v", ok, err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()

	if got, want := acquired.Load(), int64(clients*perClient*rounds); got != want {
		t.Fatalf("%d acquisitions, want %d", got, want)
	}
	if got := counter.Load(); got != acquired.Load() {
		t.Fatalf("counter %d after %d locked increments: updates were lost", got, acquired.Load())
	}
	slices.SortFunc(holds, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	for i := 1; i < len(holds); i++ {
		if holds[i][0].Before(holds[i-1][1]) {
			t.Fatalf("hold %d started %v before hold %d ended", i, holds[i-1][1].Sub(holds[i][0]), i-1)
		}
	}
}
