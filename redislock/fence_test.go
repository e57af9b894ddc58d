package redislock_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestFencingTokens: 20 goroutines x 200 acquisitions of one key, with
// expiries forced by holders that outlive their 5 ms locks. Every
// acquisition gets a distinct token and together they are exactly
// 1..N: Redis minted them in acquisition order, with no gap or repeat.
// A storage guard that keeps the highest token seen rejects every write
// that carries an older one.
func TestFencingTokens(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		const goroutines, each = 20, 200
		var (
			mu      sync.Mutex
			tokens  []int64
			highest int64 // the storage guard
			stale   int
			wg      sync.WaitGroup
		)
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lock := b.newLock(key, redislock.WithFencing(),
					redislock.WithExpiry(5*time.Millisecond), redislock.WithTolerance(0))
				for got := 0; got < each; {
					ok, err := lock.AcquireWaitCtx(context.Background(), 10*time.Second)
					if err != nil || !ok {
						t.Errorf("AcquireWaitCtx() = %v, %v", ok, err)
						return
					}
					got++
					fence := lock.Fence()
					if got%10 == 0 {
						time.Sleep(6 * time.Millisecond) // outlive the lock: another holder may get in
					}
					mu.Lock()
					tokens = append(tokens, fence)
					if fence > highest {
						highest = fence
					} else {
						stale++ // the guard rejects it
					}
					mu.Unlock()
					_, _ = lock.Release()
				}
			}()
		}
		wg.Wait()
		sort.Slice(tokens, func(i, j int) bool { return tokens[i] < tokens[j] })
		first := tokens[0]
		for i, tok := range tokens {
			if tok != first+int64(i) {
				t.Fatalf("tokens are not consecutive from %d: position %d holds %d", first, i, tok)
			}
		}
		t.Logf("%d tokens, %d stale writes rejected by the guard", len(tokens), stale)
		if len(tokens) != goroutines*each {
			t.Fatalf("%d tokens, want %d", len(tokens), goroutines*each)
		}
	})
}

func TestFenceReentrantAndContext(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key, redislock.WithFencing())
		lock.SetExpire(5)
		mustAcquire(t, lock, true)
		first := lock.Fence()
		mustAcquire(t, lock, true) // re-entrant refresh: same token
		if lock.Fence() != first || first == 0 {
			t.Fatalf("fence %d after a re-entrant acquire, want %d (and not 0)", lock.Fence(), first)
		}
		mustRelease(t, lock, true)
		mustAcquire(t, lock, true)
		if lock.Fence() <= first {
			t.Fatalf("fence %d after a fresh acquisition, want > %d", lock.Fence(), first)
		}
		ctx := zerolock.ContextWithFence(context.Background(), lock.Fence())
		if got, ok := zerolock.FenceFromContext(ctx); !ok || got != lock.Fence() {
			t.Fatalf("FenceFromContext = %d, %v", got, ok)
		}
		if _, ok := zerolock.FenceFromContext(context.Background()); ok {
			t.Fatal("FenceFromContext found a token in an empty context")
		}
		mustRelease(t, lock, true)
	})
}

// TestFencingOnOddNames: the counter lives in the lock's slot whatever the
// name: empty, braces, an existing hash tag.
func TestFencingOnOddNames(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	for _, key := range []string{"", "{", "}", "{}", "a}b", "{user:1}:order", "x{}y"} {
		lock := redislock.New(client, key, redislock.WithFencing())
		lock.SetExpire(5)
		mustAcquire(t, lock, true)
		if lock.Fence() < 1 {
			t.Fatalf("key %q: fence %d", key, lock.Fence())
		}
		mustRelease(t, lock, true)
	}
}
