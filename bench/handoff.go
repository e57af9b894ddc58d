package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// handoffs runs waiters goroutines that take the lock, hold it, and
// release it, for d, and returns hand-offs per second. Two holders at once
// fail the run.
func handoffs(client *redis.Client, c contender, key string, waiters int, d time.Duration) (float64, error) {
	return handoffsLimit(client, c, key, waiters, 1, d)
}

// handoffsLimit is handoffs of a lock that limit holders may hold at once
// (a semaphore's permits); more fail the run.
func handoffsLimit(client *redis.Client, c contender, key string, waiters int, limit int32, d time.Duration) (float64, error) {
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
				if n := inside.Add(1); n > limit {
					mu.Lock()
					failed = fmt.Errorf("%d holders at once, %d allowed", n, limit)
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
