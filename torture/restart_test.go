package torture

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestRestartWithoutPersistence: redis-server is SIGKILLed and restarted
// (persistence off) while 20 goroutines work under one lock. While it is
// down every call fails with an error and none succeeds; nothing panics;
// after it returns the workload runs again with no overlap; and a lock taken
// before the crash is gone, as DEPLOYMENT.md says: its holder's Release
// reports false and another holder gets the key at once.
func TestRestartWithoutPersistence(t *testing.T) {
	srv := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	before := redislock.New(client, "torture:restart:held")
	before.SetExpire(60)
	if ok, err := before.Acquire(); !ok || err != nil {
		t.Fatalf("Acquire() before the crash = %v, %v", ok, err)
	}

	var (
		down        atomic.Bool
		inside      atomic.Int32
		acquired    atomic.Int64
		errsDown    atomic.Int64
		successDown atomic.Int64
		wg          sync.WaitGroup
	)
	stop := time.Now().Add(4 * time.Second)
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lock := redislock.New(client, "torture:restart:work", redislock.WithExpiry(2*time.Second))
			for time.Now().Before(stop) {
				ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
				ok, err := lock.AcquireCtx(ctx)
				cancel()
				if err != nil {
					if down.Load() {
						errsDown.Add(1)
					}
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if !ok {
					continue
				}
				if down.Load() {
					successDown.Add(1)
				}
				if inside.Add(1) != 1 {
					t.Error("two holders at once")
				}
				acquired.Add(1)
				time.Sleep(200 * time.Microsecond)
				inside.Add(-1)
				_, _ = lock.Release()
			}
		}()
	}
	time.Sleep(time.Second)
	down.Store(true)
	srv.Kill()
	time.Sleep(time.Second)
	// Calls that were sent before the kill may still come back successful:
	// count from a moment after it.
	successDown.Store(0)
	time.Sleep(500 * time.Millisecond)
	down.Store(false)
	srv.Restart(t)
	wg.Wait()

	if errsDown.Load() == 0 {
		t.Error("no call failed while the server was down")
	}
	if successDown.Load() != 0 {
		t.Errorf("%d acquisitions succeeded with the server down", successDown.Load())
	}
	if ok, err := before.Release(); ok || err != nil {
		t.Errorf("Release() of a lock taken before the crash = %v, %v; want false, nil (the lock is gone)", ok, err)
	}
	other := redislock.New(client, "torture:restart:held")
	other.SetExpire(5)
	if ok, err := other.Acquire(); !ok || err != nil {
		t.Errorf("another holder after the restart = %v, %v; want true", ok, err)
	}
	record(t, "20 goroutines on one key, server SIGKILLed and restarted without persistence",
		fmt.Sprintf("%d acquisitions, %d errors while down, 0 successes while down, no overlap; the pre-crash lock was gone",
			acquired.Load(), errsDown.Load()))
}
