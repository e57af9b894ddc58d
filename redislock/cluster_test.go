package redislock_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// clusterBackends are the two ways to hand the lock a cluster: a go-redis
// *ClusterClient and go-zero's store with Type cluster.
func clusterBackends(t *testing.T, c *redistest.Cluster) []backend {
	t.Helper()
	client := c.Client(t)
	zstore := zredis.MustNewRedis(zredis.RedisConf{
		Host: strings.Join(c.Addrs(), ","), Type: zredis.ClusterType, NonBlock: true, DisableIdentity: true,
	})
	return []backend{
		{"go-redis cluster", func(key string, opts ...redislock.Option) *redislock.RedisLock {
			return redislock.New(client, key, opts...)
		}, func() redislock.Store { return client }},
		{"go-zero cluster", func(key string, opts ...redislock.Option) *redislock.RedisLock {
			return redislock.NewRedisLock(zstore, key, opts...)
		}, func() redislock.Store { return redislock.GoZeroStore(zstore) }},
	}
}

// fuzzName returns a resource name made of characters that matter to hash
// tags, of random length (empty included).
func fuzzName(r *rand.Rand) string {
	const alphabet = "{}ab:{}1 }{"
	b := make([]byte, r.IntN(12))
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// TestClusterNoCrossSlot: 10,000 fuzzed resource names, each acquired with
// a fencing token (two keys in one script) and released (a shard-channel
// publish in the script): none is refused with CROSSSLOT.
func TestClusterNoCrossSlot(t *testing.T) {
	c := redistest.SharedCluster(t)
	for _, b := range clusterBackends(t, c) {
		t.Run(b.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(len(b.name))))
			const names = 5000 // per backend: 10,000 in all
			for i := 0; i < names; i++ {
				name := fmt.Sprintf("%s%d", fuzzName(r), i%3)
				lock := b.newLock(name, redislock.WithFencing())
				lock.SetExpire(5)
				ok, err := lock.Acquire()
				if err != nil || !ok {
					t.Fatalf("name %q: Acquire() = %v, %v", name, ok, err)
				}
				if ok, err := lock.Release(); err != nil || !ok {
					t.Fatalf("name %q: Release() = %v, %v", name, ok, err)
				}
			}
		})
	}
}

// TestClusterMutualExclusion: 20 goroutines lock random keys among 100 for
// a second; no key ever has two holders.
func TestClusterMutualExclusion(t *testing.T) {
	c := redistest.SharedCluster(t)
	for _, b := range clusterBackends(t, c) {
		t.Run(b.name, func(t *testing.T) {
			var (
				inside   [100]atomic.Int32
				acquired atomic.Int64
				wg       sync.WaitGroup
			)
			deadline := time.Now().Add(time.Second)
			for g := 0; g < 20; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r := rand.New(rand.NewPCG(uint64(g), 7))
					for time.Now().Before(deadline) {
						k := r.IntN(100)
						lock := b.newLock(fmt.Sprintf("zerolock-test:cluster-mutex:%d", k))
						lock.SetExpire(5)
						ok, err := lock.Acquire()
						if err != nil {
							t.Errorf("Acquire: %v", err)
							return
						}
						if !ok {
							continue
						}
						if inside[k].Add(1) != 1 {
							t.Errorf("key %d has two holders", k)
						}
						acquired.Add(1)
						inside[k].Add(-1)
						if ok, err := lock.Release(); !ok || err != nil {
							t.Errorf("Release() = %v, %v", ok, err)
						}
					}
				}()
			}
			wg.Wait()
			if acquired.Load() == 0 {
				t.Fatal("no acquisition")
			}
			t.Logf("%d acquisitions across 100 keys", acquired.Load())
		})
	}
}

// TestClusterWaitAndWatch: waiting is woken by the release's shard-channel
// message, and the watchdog renews, on a cluster.
func TestClusterWaitAndWatch(t *testing.T) {
	c := redistest.SharedCluster(t)
	for _, b := range clusterBackends(t, c) {
		t.Run(b.name, func(t *testing.T) {
			key := "zerolock-test:cluster-wait:" + b.name
			holder := b.newLock(key, redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
			mustAcquire(t, holder, true)
			lockCtx := holder.Watch(context.Background())
			waiter := b.newLock(key, redislock.WithBackoff(2*time.Second, 2*time.Second))
			waiter.SetExpire(5)
			got := make(chan time.Time, 1)
			go func() {
				ok, err := waiter.AcquireWaitCtx(context.Background(), 10*time.Second)
				if !ok || err != nil {
					t.Errorf("AcquireWaitCtx() = %v, %v", ok, err)
				}
				got <- time.Now()
			}()
			time.Sleep(1500 * time.Millisecond) // past the 1s expiry: only renewals keep it
			if lockCtx.Err() != nil {
				t.Fatalf("watchdog lost the lock on the cluster: %v", context.Cause(lockCtx))
			}
			released := time.Now()
			mustRelease(t, holder, true)
			if d := (<-got).Sub(released); d > time.Second {
				t.Fatalf("waiter woke %v after the release: the notification was not delivered", d)
			}
			mustRelease(t, waiter, true)
		})
	}
}

// TestClusterMasterKilled: the master of a lock's slot is killed: calls
// fail with an error (never a false success), its replica takes over, and
// the lock works again within seconds. The node then rejoins as a replica.
func TestClusterMasterKilled(t *testing.T) {
	c := redistest.SharedCluster(t)
	client := c.Client(t)
	const key = "zerolock-test:cluster-failover"
	master := c.MasterOf(t, key)
	lock := redislock.New(client, key)
	lock.SetExpire(5)
	mustAcquire(t, lock, true)
	mustRelease(t, lock, true)

	master.Kill()
	killed := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	ok, err := lock.AcquireCtx(ctx)
	cancel()
	if ok || err == nil {
		t.Fatalf("Acquire() with the slot's master dead = %v, %v; want an error", ok, err)
	}
	var recovered time.Duration
	for deadline := time.Now().Add(20 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		ok, err := lock.AcquireCtx(ctx)
		cancel()
		if ok && err == nil {
			recovered = time.Since(killed)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lock unusable 20s after the master was killed: %v, %v", ok, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("lock usable again %v after the master was killed", recovered.Round(time.Millisecond))
	mustRelease(t, lock, true)
	master.Restart(t)
	if err := c.WaitHealthy(20 * time.Second); err != nil {
		t.Fatal(err)
	}
}

// TestClusterWaiterFollowsMovedSlot: the slot of a key that a waiter is
// subscribed for moves to another master (a resharding), whose old owner
// drops the slot's shard channels. The waiter's subscription follows the
// slot to its new master, and the holder's release there wakes it: its
// back-off (20 s) is longer than the test waits, so only the wake-up can
// end its wait in time.
func TestClusterWaiterFollowsMovedSlot(t *testing.T) {
	c := redistest.SharedCluster(t)
	ctx := context.Background()
	for _, b := range clusterBackends(t, c) {
		t.Run(b.name, func(t *testing.T) {
			key := "zerolock-test:slot-moves:" + b.name
			channel := redislock.ReleaseChannel(key)
			slot := int(c.Client(t).ClusterKeySlot(ctx, key).Val())
			from := c.MasterOf(t, key)
			var to *redistest.Server
			for _, m := range c.Masters(t) {
				if m != from {
					to = m
					break
				}
			}
			if to == nil {
				t.Fatal("no other master")
			}
			// A subscriber may be on the master or on one of its replicas
			// (a client's stale slot map can send it there; the master's
			// publications reach it), which ROLE lists once they are
			// connected: the shard is looked up on every poll.
			clients := map[string]*redis.Client{}
			for _, n := range c.Nodes {
				clients[n.Addr()] = n.Client(t)
			}
			subscribers := func(master *redistest.Server) (n int64) {
				shard := []string{master.Addr()}
				if role, err := clients[master.Addr()].Do(ctx, "role").Slice(); err == nil && len(role) > 2 {
					replicas, _ := role[2].([]any)
					for _, r := range replicas {
						if f, _ := r.([]any); len(f) > 1 {
							shard = append(shard, net.JoinHostPort(fmt.Sprint(f[0]), fmt.Sprint(f[1])))
						}
					}
				}
				for _, addr := range shard {
					if cl := clients[addr]; cl != nil {
						got, _ := cl.PubSubShardNumSub(ctx, channel).Result()
						n += got[channel]
					}
				}
				return n
			}
			waitSubscribed := func(master *redistest.Server) {
				t.Helper()
				for deadline := time.Now().Add(10 * time.Second); subscribers(master) == 0; {
					if time.Now().After(deadline) {
						t.Fatalf("no subscriber of the release channel in the shard of %s (the slot%s) after 10 s",
							master.Addr(), map[bool]string{true: "'s new master", false: "'s master before the move"}[master == to])
					}
					time.Sleep(20 * time.Millisecond)
				}
			}

			holder := b.newLock(key)
			holder.SetExpire(30)
			mustAcquire(t, holder, true)
			waiter := b.newLock(key, redislock.WithBackoff(20*time.Second, 20*time.Second))
			waiter.SetExpire(30)
			got := make(chan error, 1)
			waitCtx, cancel := context.WithCancel(ctx)
			done := make(chan struct{})
			t.Cleanup(func() { cancel(); <-done }) // a failed test leaves no waiter behind
			go func() {
				defer close(done)
				ok, err := waiter.AcquireWaitCtx(waitCtx, 15*time.Second)
				if err == nil && !ok {
					err = fmt.Errorf("not acquired")
				}
				got <- err
			}()
			waitSubscribed(from)

			t.Cleanup(func() { c.RestoreSlot(t, slot, from) })
			c.MoveSlot(t, slot, to)
			waitSubscribed(to)

			mustRelease(t, holder, true)
			select {
			case err := <-got:
				if err != nil {
					t.Fatalf("waiter: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the waiter was not woken by the release on the slot's new master")
			}
			mustRelease(t, waiter, true)
		})
	}
}
