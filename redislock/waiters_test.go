package redislock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// publishes counts the release announcements a server has sent.
func publishes(t *testing.T, admin *redis.Client) int64 {
	t.Helper()
	return redistest.Calls(t, admin, "spublish", "publish")
}

// waitFlagged polls until a waiting acquire's try was refused, and the
// waiter sleeps on its back-off or a wake-up: it marked key's hold as
// waited on (a lock token's last character "!": see acquire.lua), or, for
// a hold it cannot mark, set the key's waiter flag.
func waitFlagged(t *testing.T, client redis.Cmdable, key string) {
	t.Helper()
	flag := redislock.WaiterFlag(key)
	for deadline := time.Now().Add(5 * time.Second); ; {
		held, _ := client.Get(context.Background(), key).Result()
		n, err := client.Exists(context.Background(), flag).Result()
		if strings.HasSuffix(held, "!") || err == nil && n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiter never marked or flagged %q: value %q, flag exists=%d, %v", key, held, n, err)
		}
		time.Sleep(time.Millisecond) // poll until the waiter's try is refused
	}
}

// An olderHold is a hold as zerolock took it before lock tokens could be
// marked: a 26-character token, released by that version's release.lua,
// which read the waiter flag and announced the release while it existed.
// It stands for a process not yet upgraded in a rolling upgrade.
type olderHold struct {
	client redis.Cmdable
	key    string
	token  string
}

// olderRelease is release.lua before lock tokens could be marked.
var olderRelease = redis.NewScript(`local held = redis.call("MGET", KEYS[1], KEYS[2])
if held[1] ~= ARGV[1] then
    return 0
end
redis.call("DEL", KEYS[1])
if held[2] then
    local sent = redis.pcall("SPUBLISH", ARGV[2], "released")
    if type(sent) == "table" and sent.err then
        redis.pcall("PUBLISH", ARGV[2], "released")
    end
end
return 1`)

// takeOlderHold takes key as an older version did, for 30 s.
func takeOlderHold(t *testing.T, client redis.Cmdable, key string) olderHold {
	t.Helper()
	h := olderHold{client: client, key: key, token: "ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
	if ok, err := client.SetNX(context.Background(), key, h.token, 30*time.Second).Result(); !ok || err != nil {
		t.Fatalf("older hold of %q: %v, %v", key, ok, err)
	}
	return h
}

// release releases the hold as the older version did.
func (h olderHold) release(t *testing.T) {
	t.Helper()
	n, err := olderRelease.Run(context.Background(), h.client, []string{h.key, redislock.WaiterFlag(h.key)},
		h.token, redislock.ReleaseChannel(h.key)).Int64()
	if n != 1 || err != nil {
		t.Fatalf("older release of %q = %d, %v", h.key, n, err)
	}
}

// TestReleaseAnnouncesOnlyWhenWaited: on both stores, 50 cycles of a lock
// with wake-ups on (the default) and nobody waiting publish nothing and
// leave no waiter flag, and WithFencing's cycles neither.
func TestReleaseAnnouncesOnlyWhenWaited(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		for _, lock := range []*redislock.RedisLock{b.newLock(key), b.newLock(key, redislock.WithFencing())} {
			lock.SetExpire(30)
			before := publishes(t, admin)
			for i := 0; i < 50; i++ {
				mustAcquire(t, lock, true)
				mustAcquire(t, lock, true) // re-entrant: the script path
				mustRelease(t, lock, true)
			}
			if got := publishes(t, admin) - before; got != 0 {
				t.Fatalf("50 releases nobody waited for published %d times", got)
			}
			if n, err := admin.Exists(context.Background(), redislock.WaiterFlag(key)).Result(); err != nil || n != 0 {
				t.Fatalf("waiter flag after try-lock cycles: exists=%d, %v", n, err)
			}
		}
	})
}

// TestWaitedHoldWakesLongBackoff: a waiter whose back-off would sleep at
// least 5 s is woken by the release within 4 s, with exactly one
// announcement, on both stores, with and without fencing (acquire.lua and
// fence.lua mark the hold, and set no flag), on one node and on a cluster.
func TestWaitedHoldWakesLongBackoff(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	for _, b := range backends(t, srv) {
		for _, fencing := range []bool{false, true} {
			name := b.name
			if fencing {
				name += " fencing"
			}
			t.Run(name, func(t *testing.T) {
				key := "zerolock-test:" + t.Name()
				wakesLongBackoff(t, b, admin, admin, key, fencing)
			})
		}
	}
	t.Run("cluster", func(t *testing.T) {
		c := redistest.SharedCluster(t)
		client := c.Client(t)
		for _, b := range clusterBackends(t, c) {
			t.Run(b.name, func(t *testing.T) {
				key := "zerolock-test:" + t.Name()
				wakesLongBackoff(t, b, c.MasterOf(t, key).Client(t), client, key, false)
			})
		}
	})
}

// wakesLongBackoff runs TestWaitedHoldWakesLongBackoff on key: admin is
// the key's server, client reaches the key.
func wakesLongBackoff(t *testing.T, b backend, admin *redis.Client, client redis.Cmdable, key string, fencing bool) {
	t.Helper()
	holder := b.newLock(key)
	holder.SetExpire(60) // the waiter's sleep is not cut short by the holder's expiry
	mustAcquire(t, holder, true)

	opts := []redislock.Option{redislock.WithBackoff(10*time.Second, 10*time.Second)}
	if fencing {
		opts = append(opts, redislock.WithFencing())
	}
	waiter := b.newLock(key, opts...)
	waiter.SetExpire(60)
	got := inBackground(func() (bool, error) { return waiter.AcquireWaitCtx(context.Background(), 30*time.Second) })
	waitFlagged(t, client, key)
	if n, err := client.Exists(context.Background(), redislock.WaiterFlag(key)).Result(); n != 0 || err != nil {
		t.Errorf("a waiter refused by a lock's hold set the waiter flag (exists=%d, %v); want the hold marked", n, err)
	}
	if held, err := client.Get(context.Background(), key).Result(); !strings.HasSuffix(held, "!") || err != nil {
		t.Errorf("held value %q, %v; want it marked", held, err)
	}

	before := publishes(t, admin)
	mustRelease(t, holder, true)
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("AcquireWaitCtx() = %v", err)
		}
	case <-time.After(4 * time.Second):
		// jitter(10s) sleeps at least 5 s: only the wake-up can come sooner.
		t.Fatal("the waiter was not woken by the release")
	}
	if n := publishes(t, admin) - before; n != 1 {
		t.Errorf("the release published %d times, want 1", n)
	}
	if fencing && waiter.Fence() <= 0 {
		t.Errorf("fencing waiter's Fence() = %d", waiter.Fence())
	}
	mustRelease(t, waiter, true)
}

// TestWaiterFlagExpires: a waiter refused by an older version's hold (in a
// rolling upgrade), which it cannot mark, sets the waiter flag, which that
// version's release reads: the release wakes it. The flag outlives the
// waiter's back-off by the margin only; once the wait is over it expires on
// its own, and then releases publish nothing again.
func TestWaiterFlagExpires(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		holder := takeOlderHold(t, admin, key)
		waiter := b.newLock(key, redislock.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
		waiter.SetExpire(30)
		got := inBackground(func() (bool, error) { return waiter.AcquireWaitCtx(context.Background(), 10*time.Second) })
		waitFlagged(t, admin, key)
		flag := redislock.WaiterFlag(key)
		want := redislock.WaiterFlagTTL(5*time.Millisecond, 20*time.Millisecond)
		if ttl, err := admin.PTTL(context.Background(), flag).Result(); err != nil || ttl <= 0 || ttl > want {
			t.Fatalf("waiter flag's PTTL = %v, %v; want in (0, %v]", ttl, err, want)
		}
		before := publishes(t, admin)
		holder.release(t)
		if err := <-got; err != nil {
			t.Fatalf("AcquireWaitCtx() = %v", err)
		}
		if n := publishes(t, admin) - before; n != 1 {
			t.Fatalf("the older release of a flagged key published %d times, want 1", n)
		}
		mustRelease(t, waiter, true)

		for deadline := time.Now().Add(5 * time.Second); ; {
			n, err := admin.Exists(context.Background(), flag).Result()
			if err == nil && n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiter flag still there 5 s after the wait: exists=%d, %v", n, err)
			}
			time.Sleep(10 * time.Millisecond) // poll until the flag expires
		}
		before = publishes(t, admin)
		takeOlderHold(t, admin, key).release(t)
		if n := publishes(t, admin) - before; n != 0 {
			t.Fatalf("a release after the flag expired published %d times", n)
		}
	})
}

// TestWaiterFlagNeverShortened: a waiter with a short back-off does not
// cut short the flag of one that sleeps longer (on an older version's hold,
// which waiters flag: see TestWaiterFlagExpires).
func TestWaiterFlagNeverShortened(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		holder := takeOlderHold(t, admin, key)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan struct{}, 2)
		wait := func(lock *redislock.RedisLock) {
			_, _ = lock.AcquireWaitCtx(ctx, 0)
			done <- struct{}{}
		}
		long := b.newLock(key, redislock.WithBackoff(10*time.Second, 10*time.Second))
		go wait(long)
		waitFlagged(t, admin, key)
		short := b.newLock(key, redislock.WithBackoff(time.Millisecond, 2*time.Millisecond))
		go wait(short)
		// The short waiter retries every millisecond or two: give it many
		// tries, measured by the server's script calls.
		calls := redistest.Calls(t, admin, "evalsha", "eval")
		for redistest.Calls(t, admin, "evalsha", "eval") < calls+20 {
			time.Sleep(time.Millisecond) // poll until the short waiter has retried
		}
		long10s := redislock.WaiterFlagTTL(10*time.Second, 10*time.Second)
		if ttl, err := admin.PTTL(context.Background(), redislock.WaiterFlag(key)).Result(); err != nil ||
			ttl <= redislock.WaiterFlagTTL(time.Millisecond, 2*time.Millisecond) || ttl > long10s {
			t.Fatalf("waiter flag's PTTL = %v, %v after the short waiter's tries; want the long waiter's (up to %v)",
				ttl, err, long10s)
		}
		cancel()
		<-done
		<-done
		holder.release(t)
	})
}

// TestOtherPrimitivesMarkTheHold: the primitives that wait on a key a
// RedisLock may hold (a MultiLock on its keys, both sides of an RWLock on
// its key) mark its hold too, so the RedisLock's release wakes them: each, with
// a back-off of at least 5 s, gets the key within 4 s of the release.
func TestOtherPrimitivesMarkTheHold(t *testing.T) {
	srv := redistest.Start(t)
	slow := redislock.WithBackoff(10*time.Second, 10*time.Second)
	type waitFunc = func(ctx context.Context) (bool, error)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		for _, w := range []struct {
			name string
			make func() (acquire, release waitFunc)
		}{
			{"multi-lock", func() (waitFunc, waitFunc) {
				m := newMulti(t, b.store(), []string{key, key + ":other"}, slow)
				return func(ctx context.Context) (bool, error) { return m.AcquireWaitCtx(ctx, 30*time.Second) }, m.ReleaseCtx
			}},
			{"rwlock writer", func() (waitFunc, waitFunc) {
				l := newRW(b, key, slow)
				return func(ctx context.Context) (bool, error) { return l.LockWaitCtx(ctx, 30*time.Second) }, l.UnlockCtx
			}},
			{"rwlock reader", func() (waitFunc, waitFunc) {
				l := newRW(b, key, slow)
				return func(ctx context.Context) (bool, error) { return l.RLockWaitCtx(ctx, 30*time.Second) }, l.RUnlockCtx
			}},
		} {
			t.Run(w.name, func(t *testing.T) {
				holder := b.newLock(key)
				holder.SetExpire(60)
				mustAcquire(t, holder, true)
				acquire, release := w.make()
				got := inBackground(func() (bool, error) { return acquire(context.Background()) })
				waitFlagged(t, admin, key)
				mustRelease(t, holder, true)
				select {
				case err := <-got:
					if err != nil {
						t.Fatalf("waiting acquire = %v", err)
					}
				case <-time.After(4 * time.Second):
					t.Fatal("the waiter was not woken by the RedisLock's release")
				}
				if ok, err := release(context.Background()); !ok || err != nil {
					t.Fatalf("release of the waiter = %v, %v", ok, err)
				}
				if err := admin.Del(context.Background(), redislock.WaiterFlag(key)).Err(); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
}
