package redislock_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestScriptFlushDoesNotTripGoZeroBreaker runs go-zero's failure workload:
// 30 goroutines contending for one key through go-zero's store, on a fresh
// redis-server and again right after SCRIPT FLUSH. go-zero's breaker counts
// NOSCRIPT replies as failures; with go-zero's own RedisLock this workload
// opens the breaker and strands the lock. Here every call must succeed and
// every holder must release.
//
// Beyond "no error", the server must never have answered NOSCRIPT at all:
// go-zero's breaker counts each such reply, so one burst of them after a
// flush is how go-zero's own lock gets stranded.
func TestScriptFlushDoesNotTripGoZeroBreaker(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)

	for _, phase := range []string{"fresh server", "after SCRIPT FLUSH"} {
		t.Run(phase, func(t *testing.T) {
			if phase == "after SCRIPT FLUSH" {
				if err := admin.ScriptFlush(context.Background()).Err(); err != nil {
					t.Fatal(err)
				}
			}
			store := newGoZeroStore(t, srv)
			acquired := contend(t, 30, 2*time.Second, func() *redislock.RedisLock {
				lock := redislock.NewRedisLock(store, "zerolock-test:breaker")
				lock.SetExpire(1)
				return lock
			})
			if acquired == 0 {
				t.Fatal("no acquisition succeeded")
			}
			errs, err := admin.Info(context.Background(), "errorstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(errs, "NOSCRIPT") {
				t.Fatalf("the server answered NOSCRIPT, which go-zero's breaker counts:\n%s", errs)
			}
			t.Logf("%d acquisitions in 2s", acquired)
		})
	}
}

// contend runs workers goroutines that each acquire and release their own
// lock until the duration ends, failing the test on any error or failed
// release, and returns the number of acquisitions.
func contend(t *testing.T, workers int, d time.Duration, newLock func() *redislock.RedisLock) int64 {
	t.Helper()
	deadline := time.Now().Add(d)
	var (
		acquired atomic.Int64
		wg       sync.WaitGroup
	)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lock := newLock()
			for time.Now().Before(deadline) {
				ok, err := lock.Acquire()
				if err != nil {
					t.Errorf("Acquire: %v", err)
					return
				}
				if !ok {
					continue
				}
				acquired.Add(1)
				if ok, err := lock.Release(); !ok || err != nil {
					t.Errorf("Release() = %v, %v: the lock is stranded", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return acquired.Load()
}
