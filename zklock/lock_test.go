package zklock_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerolock/zerolock/zklock"
)

// TestMutualExclusion runs 3 connections x 10 goroutines x 10
// acquisitions of one key, each a read, a short sleep and a write of a
// counter under the lock: no update is lost and no two holds overlap.
func TestMutualExclusion(t *testing.T) {
	const conns, workers, rounds = 3, 10, 10
	var (
		counter  int // guarded by the ZooKeeper lock only
		inside   atomic.Int32
		overlaps atomic.Int32
		mu       sync.Mutex
		holds    [][2]time.Time
	)
	var wg sync.WaitGroup
	errs := make(chan error, conns*workers)
	for c := 0; c < conns; c++ {
		conn := connect(t)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lock := zklock.New(conn, "counter", testRoot(t), zklock.WithExpiry(time.Minute))
				for r := 0; r < rounds; r++ {
					ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
					ok, err := lock.AcquireWaitCtx(ctx, 0)
					cancel()
					if err != nil || !ok {
						errs <- errors.Join(errors.New("acquire failed"), err)
						return
					}
					start := time.Now()
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					v := counter
					time.Sleep(time.Duration(rand.N(1000)) * time.Microsecond) // widens the race window
					counter = v + 1
					inside.Add(-1)
					end := time.Now()
					mu.Lock()
					holds = append(holds, [2]time.Time{start, end})
					mu.Unlock()
					if ok, err := lock.Release(); err != nil || !ok {
						errs <- errors.Join(errors.New("release failed"), err)
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := conns * workers * rounds; counter != n || len(holds) != n {
		t.Fatalf("counter %d after %d acquisitions (%d holds recorded), want %d", counter, n, len(holds), n)
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d holds began while another was inside", n)
	}
	sort.Slice(holds, func(i, j int) bool { return holds[i][0].Before(holds[j][0]) })
	for i := 1; i < len(holds); i++ {
		if holds[i][0].Before(holds[i-1][1]) {
			t.Fatalf("hold %d began at %v, before hold %d ended at %v", i, holds[i][0], i-1, holds[i-1][1])
		}
	}
}

// TestTryLock checks AcquireCtx's answers: a contender gets false without
// leaving its node behind, a held lock answers true again, and Release
// tells whether it released.
func TestTryLock(t *testing.T) {
	connA, connB := connect(t), connect(t)
	a := zklock.New(connA, "order:1", testRoot(t), zklock.WithExpiry(time.Minute))
	b := zklock.New(connB, "order:1", testRoot(t), zklock.WithExpiry(time.Minute))
	mustAcquire(t, a)
	mustAcquire(t, a) // re-entrant: still held
	if ok, err := b.AcquireCtx(context.Background()); err != nil || ok {
		t.Fatalf("contender: %v, %v; want false, nil", ok, err)
	}
	if n := queueLen(t, connA, a); n != 1 {
		t.Fatalf("%d nodes queue after a refused try, want the holder's only", n)
	}
	if ok, err := a.Release(); err != nil || !ok {
		t.Fatalf("release: %v, %v; want true, nil", ok, err)
	}
	if ok, err := a.Release(); err != nil || ok {
		t.Fatalf("second release: %v, %v; want false, nil", ok, err)
	}
	mustAcquire(t, b)
	if ok, err := b.ReleaseCtx(context.Background()); err != nil || !ok {
		t.Fatalf("release b: %v, %v", ok, err)
	}
	if n := queueLen(t, connA, a); n != 0 {
		t.Fatalf("%d nodes left after every release", n)
	}
}

// TestKeysWithAnyCharacter locks keys that ZooKeeper paths could not hold
// as they are; distinct keys are distinct locks.
func TestKeysWithAnyCharacter(t *testing.T) {
	conn := connect(t)
	keys := []string{"zerolock:POST:/orders:7:B-1", "zerolock:POST:%2Forders:7:B-1", "", ".", "..", "é/\x00"}
	for _, k := range keys {
		mustAcquire(t, zklock.New(conn, k, testRoot(t), zklock.WithExpiry(time.Minute)))
	}
}

func TestInvalidExpiry(t *testing.T) {
	lock := zklock.New(connect(t), "k", testRoot(t), zklock.WithExpiry(0))
	if _, err := lock.Acquire(); !errors.Is(err, zklock.ErrInvalidExpiry) {
		t.Fatalf("acquire with expiry 0: %v, want ErrInvalidExpiry", err)
	}
	if _, err := lock.AcquireWait(time.Second); !errors.Is(err, zklock.ErrInvalidExpiry) {
		t.Fatalf("wait with expiry 0: %v, want ErrInvalidExpiry", err)
	}
}

// TestClosedConnection: a call on a closed connection returns an error
// wrapping ErrZooKeeper, never a panic.
func TestClosedConnection(t *testing.T) {
	conn := connect(t)
	conn.Close()
	lock := zklock.New(conn, "k", testRoot(t))
	if _, err := lock.Acquire(); !errors.Is(err, zklock.ErrZooKeeper) {
		t.Fatalf("acquire on a closed connection: %v, want ErrZooKeeper", err)
	}
}

// TestFenceIncreases hands the lock over between connections, with
// refused tries in between: every holder's token is above the last.
func TestFenceIncreases(t *testing.T) {
	conns := []*zklock.Lock{
		zklock.New(connect(t), "fenced", testRoot(t), zklock.WithExpiry(time.Minute)),
		zklock.New(connect(t), "fenced", testRoot(t), zklock.WithExpiry(time.Minute)),
	}
	if f := conns[0].Fence(); f != 0 {
		t.Fatalf("fence before any hold: %d, want 0", f)
	}
	var last int64
	for i := 0; i < 10; i++ {
		holder, other := conns[i%2], conns[(i+1)%2]
		mustAcquire(t, holder)
		if ok, err := other.Acquire(); ok || err != nil {
			t.Fatalf("round %d: contender got %v, %v", i, ok, err)
		}
		f := holder.Fence()
		if f <= last {
			t.Fatalf("round %d: fence %d after %d", i, f, last)
		}
		last = f
		if ok, err := holder.Release(); !ok || err != nil {
			t.Fatalf("round %d: release %v, %v", i, ok, err)
		}
	}
}
