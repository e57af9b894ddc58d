package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// spiedClusterStores are both stores on the shared cluster with spyHook
// installed. go-zero keeps one client per address list for the process,
// made with the options of its first store, so the go-zero store names the
// nodes in reverse order: a list no other test uses.
func spiedClusterStores(t *testing.T, c *redistest.Cluster) map[string]redislock.Store {
	t.Helper()
	client := c.Client(t)
	client.AddHook(spyHook{})
	addrs := c.Addrs()
	slices.Reverse(addrs)
	zstore := zredis.MustNewRedis(zredis.RedisConf{
		Host: strings.Join(addrs, ","), Type: zredis.ClusterType, NonBlock: true, DisableIdentity: true,
	}, zredis.WithHook(spyHook{}))
	return map[string]redislock.Store{"go-redis cluster": client, "go-zero cluster": redislock.GoZeroStore(zstore)}
}

// crossSlotKeys names n keys for the running test, each in a slot of its
// own, as the cluster itself computes slots.
func crossSlotKeys(t *testing.T, admin *redis.ClusterClient, n int) []string {
	t.Helper()
	var keys []string
	slots := map[int64]bool{}
	for i := 0; len(keys) < n; i++ {
		key := fmt.Sprintf("zerolock-test:%s:k%d", t.Name(), i)
		slot, err := admin.ClusterKeySlot(context.Background(), key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if !slots[slot] {
			slots[slot] = true
			keys = append(keys, key)
		}
	}
	return keys
}

// spied returns a context that feeds a new scriptSpy, and the spy.
func spied() (context.Context, *scriptSpy) {
	spy := new(scriptSpy)
	return context.WithValue(context.Background(), spyKey{}, spy), spy
}

// TestMultiLockClusterSlots: on the real cluster, on both stores, a
// MultiLock across three slots takes and frees them with one script per
// slot, and one whose keys share a hash tag with one script in all; both
// hold every key with one token, which RedisLocks on the keys respect.
func TestMultiLockClusterSlots(t *testing.T) {
	c := redistest.SharedCluster(t)
	admin := c.Client(t)
	for name, store := range spiedClusterStores(t, c) {
		t.Run(name, func(t *testing.T) {
			tag := fmt.Sprintf("{zerolock-test:%s}", t.Name())
			for _, tc := range []struct {
				name    string
				keys    []string
				scripts int
			}{
				{"cross-slot", crossSlotKeys(t, admin, 3), 3},
				{"one hash tag", []string{tag + ":a", tag + ":b", tag + ":c"}, 1},
			} {
				m := newMulti(t, store, tc.keys)
				ctx, spy := spied()
				if ok, err := m.AcquireCtx(ctx); !ok || err != nil {
					t.Fatalf("%s: AcquireCtx() = %v, %v", tc.name, ok, err)
				}
				if _, n := spy.get(); n != tc.scripts {
					t.Errorf("%s: the acquire ran %d scripts; want %d", tc.name, n, tc.scripts)
				}
				mustHoldOneToken(t, admin, tc.keys)
				for _, k := range tc.keys {
					single := redislock.New(admin, k)
					mustAcquire(t, single, false)
				}
				ctx, spy = spied()
				if ok, err := m.ReleaseCtx(ctx); !ok || err != nil {
					t.Fatalf("%s: ReleaseCtx() = %v, %v", tc.name, ok, err)
				}
				if _, n := spy.get(); n != tc.scripts {
					t.Errorf("%s: the release ran %d scripts; want %d", tc.name, n, tc.scripts)
				}
				mustBeFree(t, admin, tc.keys...)
			}
		})
	}
}

// TestMultiLockClusterGivesBack: across slots, when a later slot's key is
// held, an acquire takes the earlier slots, gives them back, and returns
// false: every key it took is free again and the holder's is untouched.
func TestMultiLockClusterGivesBack(t *testing.T) {
	c := redistest.SharedCluster(t)
	admin := c.Client(t)
	for name, store := range spiedClusterStores(t, c) {
		t.Run(name, func(t *testing.T) {
			keys := redislock.MultiLockKeys(newMulti(t, store, crossSlotKeys(t, admin, 3)))
			for busy := 1; busy < len(keys); busy++ {
				holder := redislock.New(admin, keys[busy], redislock.WithExpiry(30*time.Second))
				mustAcquire(t, holder, true)
				m := newMulti(t, store, keys)
				ctx, spy := spied()
				if ok, err := m.AcquireCtx(ctx); ok || err != nil {
					t.Fatalf("key %d busy: AcquireCtx() = %v, %v; want false, nil", busy, ok, err)
				}
				// busy slots taken, one refused, busy given back.
				if _, n := spy.get(); n != 2*busy+1 {
					t.Errorf("key %d busy: %d scripts; want %d (takes, the refusal, give-backs)", busy, n, 2*busy+1)
				}
				mustBeFree(t, admin, slices.Delete(slices.Clone(keys), busy, busy+1)...)
				mustRelease(t, holder, true)
			}
		})
	}
}

// TestMultiLockClusterNeverPartial runs neverPartial on the real cluster,
// on both stores, for a second each, over 5 keys: three in slots of their
// own and two that share a hash tag.
func TestMultiLockClusterNeverPartial(t *testing.T) {
	c := redistest.SharedCluster(t)
	admin := c.Client(t)
	for name, store := range spiedClusterStores(t, c) {
		t.Run(name, func(t *testing.T) {
			tag := fmt.Sprintf("{zerolock-test:%s}", t.Name())
			keys := append(crossSlotKeys(t, admin, 3), tag+":a", tag+":b")
			r := neverPartial(t, store, admin, keys, time.Second)
			t.Logf("%d acquisitions, %d refusals, %d violations", r.acquired.Load(), r.refused.Load(), r.violations.Load())
		})
	}
}

// TestMultiLockClusterWaitAndWatch: across slots, a waiter whose back-off
// would sleep 5-10 s is woken by the holder's release, and a watched hold
// that loses the key of its last slot ends with ErrLockLost.
func TestMultiLockClusterWaitAndWatch(t *testing.T) {
	c := redistest.SharedCluster(t)
	admin := c.Client(t)
	for name, store := range spiedClusterStores(t, c) {
		t.Run(name, func(t *testing.T) {
			keys := crossSlotKeys(t, admin, 3)
			holder := newMulti(t, store, keys)
			mustMultiAcquire(t, holder, true)
			waiter := newMulti(t, store, keys, redislock.WithBackoff(10*time.Second, 10*time.Second))
			ctx, spy := spied()
			ctx, cancel := context.WithCancel(ctx)
			start := time.Now()
			got := make(chan time.Time, 1)
			done := make(chan struct{})
			go func() {
				defer close(done)
				ok, err := waiter.AcquireWaitCtx(ctx, time.Minute)
				if !ok || err != nil {
					if ctx.Err() == nil {
						t.Errorf("AcquireWaitCtx() = %v, %v; want true, nil", ok, err)
					}
					return
				}
				got <- time.Now()
			}()
			t.Cleanup(func() {
				cancel()
				<-done
			})
			first := redislock.MultiLockKeys(waiter)[0] // the slot every try is refused on
			waitUntil(t, "the waiter listens and its try after subscribing was refused", func() bool {
				_, n := spy.get()
				return redislock.HubWaiters(store, first) == 1 && n >= 2
			})
			mustMultiRelease(t, holder, true)
			mustBeWoken(t, got, start)

			mustHoldOneToken(t, admin, keys)
			lockCtx := waiter.Watch(context.Background(), zerolock.RenewEvery(20*time.Millisecond))
			last := redislock.MultiLockKeys(waiter)[len(keys)-1]
			if err := admin.Del(context.Background(), last).Err(); err != nil {
				t.Fatal(err)
			}
			if err := waitDone(t, lockCtx, 5*time.Second); !errors.Is(err, zerolock.ErrLockLost) {
				t.Fatalf("key %q deleted: Watch ended with %v; want ErrLockLost", last, err)
			}
			mustMultiRelease(t, waiter, false)
			mustBeFree(t, admin, keys...)
		})
	}
}
