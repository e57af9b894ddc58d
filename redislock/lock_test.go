package redislock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

func TestAcquireRelease(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		first := b.newLock(key)
		first.SetExpire(5)
		second := b.newLock(key)
		second.SetExpire(5)

		mustAcquire(t, first, true)
		mustAcquire(t, second, false)
		mustRelease(t, second, false) // a second lock cannot release the first's
		if n := admin.Exists(context.Background(), key).Val(); n != 1 {
			t.Fatalf("key gone after a foreign release: EXISTS = %d", n)
		}
		mustRelease(t, first, true)
		mustRelease(t, first, false) // not held any more
		mustAcquire(t, second, true)
		mustAcquire(t, first, false)
		mustRelease(t, second, true)
	})
}

func TestReentrantAcquireRefreshesExpiry(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key)
		lock.SetExpire(1)
		mustAcquire(t, lock, true)
		lock.SetExpire(10)
		mustAcquire(t, lock, true) // re-entrant: refreshes with the new expiry
		if pttl := admin.PTTL(context.Background(), key).Val(); pttl < 9*time.Second {
			t.Fatalf("PTTL after re-entrant acquire with 10s = %v, want > 9s", pttl)
		}
		if got := admin.Get(context.Background(), key).Val(); got == "" {
			t.Fatal("re-entrant acquire lost the token")
		}
		mustRelease(t, lock, true)
		mustAcquire(t, lock, true) // after release the fresh path works again
		mustRelease(t, lock, true)
	})
}

func TestExpiryIsSecondsPlusTolerance(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key)
		lock.SetExpire(1)
		start := time.Now()
		mustAcquire(t, lock, true)
		pttl := admin.PTTL(context.Background(), key).Val()
		if pttl <= time.Second || pttl > 1500*time.Millisecond {
			t.Fatalf("PTTL after SetExpire(1) = %v, want in (1000ms, 1500ms]", pttl)
		}

		// The key really expires: another lock gets in, but not before the
		// 1500 ms sent to Redis have passed since the acquire was sent.
		other := b.newLock(key)
		other.SetExpire(1)
		waitAcquire(t, other, 5*time.Second)
		if elapsed := time.Since(start); elapsed < 1490*time.Millisecond {
			t.Fatalf("another lock acquired after %v, before the 1500ms expiry", elapsed)
		}
		mustRelease(t, lock, false) // expired: the first holder no longer has it
		mustRelease(t, other, true)
	})
}

func TestMillisecondExpiryAndTolerance(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key, redislock.WithExpiry(1500*time.Millisecond),
			redislock.WithTolerance(100*time.Millisecond))
		mustAcquire(t, lock, true)
		pttl := admin.PTTL(context.Background(), key).Val()
		if pttl <= 1500*time.Millisecond || pttl > 1600*time.Millisecond {
			t.Fatalf("PTTL with 1500ms + 100ms = %v, want in (1500ms, 1600ms]", pttl)
		}
		ttl, err := lock.TTL(context.Background())
		if err != nil || ttl <= 1400*time.Millisecond || ttl > 1600*time.Millisecond {
			t.Fatalf("TTL() = %v, %v; want about 1.6s", ttl, err)
		}
		mustRelease(t, lock, true)
		if ttl, err := lock.TTL(context.Background()); err != nil || ttl != 0 {
			t.Fatalf("TTL() of a free lock = %v, %v; want 0, nil", ttl, err)
		}
	})
}

func TestTTLOfKeyWithoutExpiry(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		admin.Set(context.Background(), key, "written by someone else", 0)
		_, err := b.newLock(key).TTL(context.Background())
		if !errors.Is(err, redislock.ErrNoExpiry) {
			t.Fatalf("TTL() of a key without expiry: err = %v, want ErrNoExpiry", err)
		}
	})
}

func TestInvalidExpiry(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		for _, tc := range []struct {
			name string
			lock *redislock.RedisLock
		}{
			{"negative seconds", func() *redislock.RedisLock {
				l := b.newLock(key)
				l.SetExpire(-1)
				return l
			}()},
			{"zero expiry and tolerance", b.newLock(key, redislock.WithTolerance(0))},
			{"negative tolerance", b.newLock(key, redislock.WithExpiry(time.Second),
				redislock.WithTolerance(-2*time.Second))},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ok, err := tc.lock.Acquire()
				if ok || !errors.Is(err, redislock.ErrInvalidExpiry) {
					t.Fatalf("Acquire() = %v, %v; want false, ErrInvalidExpiry", ok, err)
				}
			})
		}
		if n := admin.Exists(context.Background(), key).Val(); n != 0 {
			t.Fatal("an invalid acquire wrote the key")
		}
	})
}

func TestContextErrors(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key)
		lock.SetExpire(5)

		canceled, cancel := context.WithCancel(context.Background())
		cancel()
		if ok, err := lock.AcquireCtx(canceled); ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("AcquireCtx(canceled) = %v, %v; want errors.Is context.Canceled", ok, err)
		}
		expired, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
		defer cancel2()
		if ok, err := lock.AcquireCtx(expired); ok || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("AcquireCtx(expired) = %v, %v; want errors.Is DeadlineExceeded", ok, err)
		}
		mustAcquire(t, lock, true)
		if ok, err := lock.ReleaseCtx(canceled); ok || !errors.Is(err, context.Canceled) {
			t.Fatalf("ReleaseCtx(canceled) = %v, %v; want errors.Is context.Canceled", ok, err)
		}
		mustRelease(t, lock, true)
	})
}

// TestFreshAcquireSendsNoScript checks the fast path: a lock that does not
// hold its key acquires with SET NX PX, and only a holder runs the script.
// go-zero's store runs scripts after a refusal (TestGoZeroCycleCommands).
func TestFreshAcquireSendsNoScript(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		if b.name == "go-zero" {
			t.Skip("go-zero's store runs scripts after a refusal: TestGoZeroCycleCommands")
		}
		ctx := context.Background()
		lock := b.newLock(key)
		lock.SetExpire(5)
		mustAcquire(t, lock, true) // warm up connections and script loading
		mustAcquire(t, lock, true)
		mustRelease(t, lock, true)

		before := redistest.Calls(t, admin, "eval", "evalsha")
		mustAcquire(t, lock, true)
		if got := redistest.Calls(t, admin, "eval", "evalsha") - before; got != 0 {
			t.Fatalf("fresh acquire ran %d scripts, want 0 (plain SET NX PX)", got)
		}
		mustAcquire(t, lock, true) // re-entrant: the script
		if got := redistest.Calls(t, admin, "eval", "evalsha") - before; got != 1 {
			t.Fatalf("re-entrant acquire ran %d scripts, want 1", got)
		}
		contender := b.newLock(key)
		contender.SetExpire(5)
		mustAcquire(t, contender, false)
		mustAcquire(t, contender, false) // a refused lock stays on SET NX
		if got := redistest.Calls(t, admin, "eval", "evalsha") - before; got != 1 {
			t.Fatalf("refused acquires ran %d scripts, want none beyond the re-entrant one", got-1)
		}
		mustRelease(t, lock, true)
		if err := admin.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestMutualExclusion has 50 goroutines, each with its own lock on one key,
// increment a counter non-atomically inside the critical section: any
// overlap would lose an increment.
func TestMutualExclusion(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		const workers = 50
		deadline := time.Now().Add(time.Second)
		var (
			counter  int // guarded by the Redis lock alone
			acquired atomic.Int64
			inside   atomic.Int32
			wg       sync.WaitGroup
		)
		for i := 0; i < workers; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lock := b.newLock(key)
				lock.SetExpire(5)
				for time.Now().Before(deadline) {
					ok, err := lock.Acquire()
					if err != nil {
						t.Errorf("Acquire: %v", err)
						return
					}
					if !ok {
						continue
					}
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d holders inside the critical section", n)
					}
					v := counter
					counter = v + 1
					acquired.Add(1)
					inside.Add(-1)
					if ok, err := lock.Release(); !ok || err != nil {
						t.Errorf("Release() = %v, %v; want true, nil", ok, err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if int64(counter) != acquired.Load() || counter == 0 {
			t.Fatalf("counter = %d, acquisitions = %d: the lock let holders overlap",
				counter, acquired.Load())
		}
		t.Logf("%d acquisitions by %d goroutines", counter, workers)
	})
}

// TestRedisStopped checks that with the server gone, calls fail with an
// error within the context's deadline and never report success.
func TestRedisStopped(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key)
		lock.SetExpire(5)
		mustAcquire(t, lock, true)
	})
	srv.Kill()
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key)
		lock.SetExpire(5)
		const budget = 2 * time.Second
		for _, op := range []struct {
			name string
			call func(context.Context) (bool, error)
		}{
			{"acquire", lock.AcquireCtx},
			{"release", lock.ReleaseCtx},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), budget)
			start := time.Now()
			ok, err := op.call(ctx)
			elapsed := time.Since(start)
			cancel()
			if ok || err == nil {
				t.Fatalf("%s with Redis down = %v, %v; want false and an error", op.name, ok, err)
			}
			if elapsed > budget+500*time.Millisecond {
				t.Fatalf("%s with Redis down took %v, beyond the %v deadline", op.name, elapsed, budget)
			}
		}
	})
}

func mustAcquire(t *testing.T, lock *redislock.RedisLock, want bool) {
	t.Helper()
	ok, err := lock.Acquire()
	if err != nil || ok != want {
		t.Fatalf("Acquire() = %v, %v; want %v, nil", ok, err, want)
	}
}

func mustRelease(t *testing.T, lock *redislock.RedisLock, want bool) {
	t.Helper()
	ok, err := lock.Release()
	if err != nil || ok != want {
		t.Fatalf("Release() = %v, %v; want %v, nil", ok, err, want)
	}
}

// waitAcquire polls Acquire until it succeeds or the deadline passes.
func waitAcquire(t *testing.T, lock *redislock.RedisLock, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		ok, err := lock.Acquire()
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if ok {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("lock not acquired within %v", within)
}

// TestReleaseOverAnotherTypeIsNotHeld: a release whose key was replaced by
// a value of another type (a hash here) answers false with no error, with
// wake-ups on and off: release.lua reads the key with a pcall of GET,
// whose caught WRONGTYPE matches no token, where a raised one would be an
// error reply, which go-zero's circuit breaker counts. The hash is left alone. On Valkey 9 a
// release WithoutWakeups is DELIFEQ, whose WRONGTYPE answers the same.
func TestReleaseOverAnotherTypeIsNotHeld(t *testing.T) {
	redistest.EachFlavour(t, func(t *testing.T, srv *redistest.Server) {
		eachBackend(t, srv, releaseOverAnotherType)
	})
}

func releaseOverAnotherType(t *testing.T, b backend, admin *redis.Client, key string) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []redislock.Option
	}{{"wake-ups", nil}, {"WithoutWakeups", []redislock.Option{redislock.WithoutWakeups()}}} {
		lock := b.newLock(key, tc.opts...)
		mustAcquire(t, lock, true)
		if err := admin.Del(ctx, key).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.HSet(ctx, key, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		if ok, err := lock.Release(); ok || err != nil {
			t.Fatalf("%s: Release() over a hash = %v, %v; want false, nil", tc.name, ok, err)
		}
		if v, err := admin.HGet(ctx, key, "f").Result(); err != nil || v != "v" {
			t.Fatalf("%s: the hash after the release: %q, %v", tc.name, v, err)
		}
		admin.Del(ctx, key)
	}
}
