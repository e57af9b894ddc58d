package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/redistest"
)

// BenchmarkHandoff: 20 waiters on one key, each holding the lock about
// 1 ms: hand-offs per second for each contender, two interleaved rounds of
// 3 s each, all against the same redis-server in one run. It reports the
// best round of each and its ratio to zerolock. Run with -benchtime 1x.
//
// A hand-off passes the lock to another waiter: a holder that released
// queues again only after someone else got the lock. (Counting every
// acquisition instead would reward a library for letting the releaser
// grab its own lock back while the others sleep in their back-off.)
func BenchmarkHandoff(b *testing.B) {
	srv := redistest.Start(b)
	client := srv.Client(b)
	const (
		waiters = 20
		rounds  = 2
		round   = 3 * time.Second
	)
	best := make(map[string]float64)
	for r := 0; r < rounds; r++ {
		for i, c := range handoffContenders {
			key := fmt.Sprintf("bench:handoff:%d:%d", r, i)
			rate, err := handoffs(client, c, key, waiters, round)
			if err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			best[c.name] = max(best[c.name], rate)
		}
	}
	base := best[handoffContenders[0].name]
	for _, c := range handoffContenders {
		b.Logf("%-26s %8.0f hand-offs/s   zerolock is %.1fx", c.name, best[c.name], base/best[c.name])
	}
	b.ReportMetric(base, "zerolock-handoffs/s")
	b.ReportMetric(base/best["bsm LinearBackoff(10ms)"], "x-bsm")
	b.ReportMetric(base/best["redsync defaults"], "x-redsync")
}

// handoffs runs waiters goroutines that take the lock, hold it, and
// release it, for d, and returns hand-offs per second. Two holders at once
// fail the run.
func handoffs(client *redis.Client, c contender, key string, waiters int, d time.Duration) (float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var (
		count  atomic.Int64
		inside atomic.Int32
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed error
		turn   = newTurns()
	)
	stop := context.AfterFunc(ctx, turn.stop)
	defer stop()
	start := time.Now()
	for i := 0; i < waiters; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := c.newWaiter(client, key)
			for ctx.Err() == nil {
				if err := w.acquire(ctx); err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						failed = err
						mu.Unlock()
					}
					return
				}
				if inside.Add(1) != 1 {
					mu.Lock()
					failed = errors.New("two holders at once")
					mu.Unlock()
				}
				mine := turn.took()
				time.Sleep(hold)
				count.Add(1)
				inside.Add(-1)
				if err := w.release(context.WithoutCancel(ctx)); err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				turn.waitOther(mine)
			}
		}()
	}
	wg.Wait()
	return float64(count.Load()) / time.Since(start).Seconds(), failed
}

// turns counts acquisitions so a releaser can wait for another waiter's.
type turns struct {
	mu      sync.Mutex
	cond    *sync.Cond
	n       int64
	stopped bool
}

func newTurns() *turns {
	t := &turns{}
	t.cond = sync.NewCond(&t.mu)
	return t
}

// took records an acquisition and returns its number.
func (t *turns) took() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	t.cond.Broadcast()
	return t.n
}

// waitOther blocks until an acquisition after number mine, or stop.
func (t *turns) waitOther(mine int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for t.n == mine && !t.stopped {
		t.cond.Wait()
	}
}

func (t *turns) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	t.cond.Broadcast()
}
