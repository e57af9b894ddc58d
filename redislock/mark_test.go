package redislock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// markHold marks key's hold as waited on, as a refused waiting try does
// (acquire.lua): the lock token's 27th and last character becomes "!".
func markHold(t *testing.T, admin redis.Cmdable, key string) {
	t.Helper()
	held, err := admin.Get(context.Background(), key).Result()
	if err != nil || len(held) != 27 || !strings.HasSuffix(held, ".") {
		t.Fatalf("hold of %q = %q, %v; want a lock token ending in \".\"", key, held, err)
	}
	if err := admin.SetRange(context.Background(), key, 26, "!").Err(); err != nil {
		t.Fatal(err)
	}
}

// TestMarkedHoldStaysTheHolders: on both stores, with and without fencing,
// a hold a waiter marked is still its holder's: a re-entrant acquire takes
// it again (the mark and the fencing token kept, the expiry refreshed),
// RefreshCtx extends it, another lock is refused, and the release deletes
// it and announces itself once, where an unmarked release announces
// nothing.
func TestMarkedHoldStaysTheHolders(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		for _, fencing := range []bool{false, true} {
			var opts []redislock.Option
			if fencing {
				opts = append(opts, redislock.WithFencing())
			}
			lock := b.newLock(key, opts...)
			lock.SetExpiry(2 * time.Second)
			mustAcquire(t, lock, true)
			fence := lock.Fence()
			markHold(t, admin, key)
			marked := admin.Get(ctx, key).Val()

			lock.SetExpire(30)
			mustAcquire(t, lock, true) // re-entrant
			if got := admin.Get(ctx, key).Val(); got != marked {
				t.Fatalf("fencing=%v: value after a re-entrant acquire %q, want the marked %q", fencing, got, marked)
			}
			if ttl := admin.PTTL(ctx, key).Val(); ttl <= 2*time.Second {
				t.Fatalf("fencing=%v: PTTL after a re-entrant acquire of a marked hold = %v, want refreshed to 30 s", fencing, ttl)
			}
			if lock.Fence() != fence {
				t.Fatalf("fencing=%v: Fence() = %d after a re-entrant acquire, want %d", fencing, lock.Fence(), fence)
			}
			if err := admin.PExpire(ctx, key, 5*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if ok, err := lock.RefreshCtx(ctx); !ok || err != nil {
				t.Fatalf("fencing=%v: RefreshCtx() of a marked hold = %v, %v", fencing, ok, err)
			}
			if ttl := admin.PTTL(ctx, key).Val(); ttl <= 5*time.Second {
				t.Fatalf("fencing=%v: PTTL after RefreshCtx = %v, want 30 s", fencing, ttl)
			}
			other := b.newLock(key)
			other.SetExpire(30)
			mustAcquire(t, other, false)

			before := publishes(t, admin)
			mustRelease(t, lock, true)
			if n := publishes(t, admin) - before; n != 1 {
				t.Fatalf("fencing=%v: the release of a marked hold published %d times, want 1", fencing, n)
			}
			if n := admin.Exists(ctx, key).Val(); n != 0 {
				t.Fatalf("fencing=%v: key after the release of a marked hold: exists=%d", fencing, n)
			}
			mustAcquire(t, other, true)
			before = publishes(t, admin)
			mustRelease(t, other, true)
			if n := publishes(t, admin) - before; n != 0 {
				t.Fatalf("fencing=%v: an unmarked release published %d times", fencing, n)
			}
		}
	})
}

// TestWaitersOfOneProcessAllWoken: three waiters in one process, with
// back-offs of at least 5 s, queue behind a holder. A process's hub wakes
// one waiter per release, so each hold a waiter wins must itself announce
// its release: a waiting win takes the key marked. Each waiter gets the
// lock within 4 s of the previous holder's release, on both stores, for
// each way to wait: AcquireWaitCtx (acquire.lua), with fencing (fence.lua),
// and a backend's AcquireOrReadWaitCtx (acquireread.lua).
func TestWaitersOfOneProcessAllWoken(t *testing.T) {
	srv := redistest.Start(t)
	slow := redislock.WithBackoff(10*time.Second, 10*time.Second)
	type waitFunc = func(ctx context.Context) (bool, error)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		for _, kind := range []struct {
			name string
			make func() (wait, release waitFunc)
		}{
			{"AcquireWaitCtx", func() (waitFunc, waitFunc) {
				l := b.newLock(key, slow)
				l.SetExpire(60)
				return func(ctx context.Context) (bool, error) { return l.AcquireWaitCtx(ctx, 30*time.Second) }, l.ReleaseCtx
			}},
			{"fencing", func() (waitFunc, waitFunc) {
				l := b.newLock(key, slow, redislock.WithFencing())
				l.SetExpire(60)
				return func(ctx context.Context) (bool, error) { return l.AcquireWaitCtx(ctx, 30*time.Second) }, l.ReleaseCtx
			}},
			{"AcquireOrReadWaitCtx", func() (waitFunc, waitFunc) {
				l := redislock.NewBackend(b.store(), slow).NewLocker(key,
					zerolock.LockerOptions{Expiry: time.Minute, Waited: true})
				return func(ctx context.Context) (bool, error) {
					ok, record, err := l.(zerolock.RecordWaiter).AcquireOrReadWaitCtx(ctx, 30*time.Second)
					if record != nil {
						return false, errors.New("read a record nobody stored")
					}
					return ok, err
				}, l.ReleaseCtx
			}},
		} {
			t.Run(kind.name, func(t *testing.T) {
				waitersAllWoken(t, b, admin, key, kind.make)
			})
		}
	})
}

// waitersAllWoken runs TestWaitersOfOneProcessAllWoken with waiters made by
// newWaiter.
func waitersAllWoken(t *testing.T, b backend, admin *redis.Client, key string,
	newWaiter func() (wait, release func(context.Context) (bool, error))) {
	holder := b.newLock(key)
	holder.SetExpire(60)
	mustAcquire(t, holder, true)
	const n = 3
	type win struct {
		release func(context.Context) (bool, error)
		err     error
	}
	ctx, cancel := context.WithCancel(context.Background())
	won := make(chan win, n)
	var wg sync.WaitGroup
	defer func() {
		cancel() // a failed test's waiters stop before it ends
		wg.Wait()
	}()
	for range n {
		wait, release := newWaiter()
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := wait(ctx)
			if err == nil && !ok {
				err = context.DeadlineExceeded
			}
			won <- win{release, err}
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for redislock.HubWaiters(b.store(), key) < n {
		if time.Now().After(deadline) {
			t.Fatal("the waiters never all started waiting")
		}
		time.Sleep(time.Millisecond) // poll until all three wait
	}
	waitFlagged(t, admin, key)
	release := holder.ReleaseCtx
	for i := range n {
		if ok, err := release(context.Background()); !ok || err != nil {
			t.Fatalf("release before waiter %d = %v, %v", i+1, ok, err)
		}
		select {
		case w := <-won:
			if w.err != nil {
				t.Fatalf("waiter %d: %v", i+1, w.err)
			}
			release = w.release
		case <-time.After(4 * time.Second):
			// jitter(10s) sleeps at least 5 s: only a wake-up comes sooner.
			t.Fatalf("waiter %d of %d was not woken by the release", i+1, n)
		}
	}
	if ok, err := release(context.Background()); !ok || err != nil {
		t.Fatalf("the last waiter's release = %v, %v", ok, err)
	}
}

// TestReleaseNamesTheChannel: release.lua names a key's release channel
// after the key as the waiters' hub does, for a key with a hash tag, a
// plain one and one with a "{" but no tag, and is handed it for keys it
// cannot name it for (a "}" without a hash tag): a subscriber of
// hub.Channel(key) receives the release of a marked hold, on both stores,
// on one node and on a cluster (where a channel in another slot than its
// key's would not be published at all).
func TestReleaseNamesTheChannel(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		releaseNamesTheChannel(t, b, admin, key)
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.SharedCluster(t)
		client := c.Client(t)
		for _, b := range clusterBackends(t, c) {
			t.Run(b.name, func(t *testing.T) {
				releaseNamesTheChannel(t, b, client, "zerolock-test:"+t.Name())
			})
		}
	})
}

// releaseNamesTheChannel runs TestReleaseNamesTheChannel on keys made from
// key; admin reaches them and subscribes to their shard channels.
func releaseNamesTheChannel(t *testing.T, b backend, admin interface {
	redis.Cmdable
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}, key string) {
	ctx := context.Background()
	for _, k := range []string{key, "{" + key + "}:tagged", key + ":a{b", key + ":a}b", key + ":{}x"} {
		sub := admin.SSubscribe(ctx, redislock.ReleaseChannel(k))
		if _, err := sub.Receive(ctx); err != nil { // the confirmation
			t.Fatal(err)
		}
		lock := b.newLock(k)
		lock.SetExpire(30)
		mustAcquire(t, lock, true)
		markHold(t, admin, k)
		mustRelease(t, lock, true)
		got, err := sub.ReceiveTimeout(ctx, 4*time.Second)
		if msg, ok := got.(*redis.Message); err != nil || !ok || msg.Channel != redislock.ReleaseChannel(k) {
			t.Errorf("key %q: received %v, %v; want the release on %q", k, got, err, redislock.ReleaseChannel(k))
		}
		_ = sub.Close()
	}
}

// TestGoZeroLocksHoldNeverMarked: go-zero's own RedisLock compares its
// token exactly, so a zerolock waiter refused by its hold (a migration
// that runs both on one key) sets the waiter flag and leaves the value
// alone: go-zero's release still releases, and the waiter then gets the
// key.
func TestGoZeroLocksHoldNeverMarked(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		own := zredis.NewRedisLock(newGoZeroStore(t, srv), key)
		own.SetExpire(30)
		if ok, err := own.AcquireCtx(ctx); !ok || err != nil {
			t.Fatalf("go-zero's AcquireCtx() = %v, %v", ok, err)
		}
		held := admin.Get(ctx, key).Val()
		waiter := b.newLock(key, redislock.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
		waiter.SetExpire(30)
		got := inBackground(func() (bool, error) { return waiter.AcquireWaitCtx(ctx, 10*time.Second) })
		waitFlagged(t, admin, key)
		if now := admin.Get(ctx, key).Val(); now != held {
			t.Fatalf("go-zero's hold %q became %q under a waiter", held, now)
		}
		if ok, err := own.ReleaseCtx(ctx); !ok || err != nil {
			t.Fatalf("go-zero's ReleaseCtx() under a waiter = %v, %v", ok, err)
		}
		if err := <-got; err != nil {
			t.Fatalf("AcquireWaitCtx() after go-zero's release = %v", err)
		}
		mustRelease(t, waiter, true)
	})
}

// TestWaiterMarksOnlyLockTokens: a waiter refused by a value that is not a
// lock token leaves it alone, though it be 27 bytes ending in "." (a
// stored record with a 10-byte result, a 27-character value of someone
// else's): no waiter writes a value it does not own. With and without
// fencing (acquire.lua, fence.lua), on both stores.
func TestWaiterMarksOnlyLockTokens(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		for _, value := range []string{"\x00zerolock-record:result-10.", "abcdefghijklmnopqrstuvwxyz."} {
			if len(value) != 27 {
				t.Fatalf("test value %q is %d bytes", value, len(value))
			}
			for _, fencing := range []bool{false, true} {
				if err := admin.Set(ctx, key, value, 30*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
				opts := []redislock.Option{redislock.WithBackoff(5*time.Millisecond, 20*time.Millisecond)}
				if fencing {
					opts = append(opts, redislock.WithFencing())
				}
				waiter := b.newLock(key, opts...)
				waiter.SetExpire(30)
				if ok, err := waiter.AcquireWaitCtx(ctx, 100*time.Millisecond); ok || err != nil {
					t.Fatalf("AcquireWaitCtx() on %q = %v, %v; want false, nil", value, ok, err)
				}
				if got := admin.Get(ctx, key).Val(); got != value {
					t.Fatalf("fencing=%v: a waiter changed %q into %q", fencing, value, got)
				}
			}
		}
	})
}

// TestWaiterWithoutSetRange: a user whose ACL forbids SETRANGE cannot mark
// the hold it waits on; its waiting tries are still refused without an
// error, and it gets the lock at its back-off once the holder releases.
func TestWaiterWithoutSetRange(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	admin := srv.Client(t)
	if err := admin.Do(ctx, "ACL", "SETUSER", "nosetrange", "on", ">pw", "~*", "&*", "+@all", "-setrange").Err(); err != nil {
		t.Fatal(err)
	}
	limited := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "nosetrange", Password: "pw"})
	t.Cleanup(func() { _ = limited.Close() })
	key := "zerolock-test:" + t.Name()
	holder := redislock.New(admin, key)
	holder.SetExpire(30)
	mustAcquire(t, holder, true)
	waiter := redislock.New(limited, key, redislock.WithBackoff(5*time.Millisecond, 20*time.Millisecond))
	waiter.SetExpire(30)
	if ok, err := waiter.AcquireWaitCtx(ctx, 100*time.Millisecond); ok || err != nil {
		t.Fatalf("AcquireWaitCtx() under a hold, without SETRANGE = %v, %v; want false, nil", ok, err)
	}
	if held := admin.Get(ctx, key).Val(); strings.HasSuffix(held, "!") {
		t.Fatalf("a user without SETRANGE marked the hold: %q", held)
	}
	got := inBackground(func() (bool, error) { return waiter.AcquireWaitCtx(ctx, 10*time.Second) })
	mustRelease(t, holder, true)
	if err := <-got; err != nil {
		t.Fatalf("AcquireWaitCtx() after the release = %v", err)
	}
	mustRelease(t, waiter, true)
}
