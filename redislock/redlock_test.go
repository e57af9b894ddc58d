package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// fiveMasters starts five independent redis-servers.
func fiveMasters(t *testing.T) ([]*redistest.Server, []redislock.Store, []*redis.Client) {
	t.Helper()
	var (
		servers []*redistest.Server
		stores  []redislock.Store
		clients []*redis.Client
	)
	for i := 0; i < 5; i++ {
		srv := redistest.Start(t)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		servers, stores, clients = append(servers, srv), append(stores, c), append(clients, c)
	}
	return servers, stores, clients
}

// TestRedlockSurvivesMinorityLoss: with 0, 1 or 2 of 5 masters killed the
// lock is acquired; with 3, 4 or 5 every attempt fails with the quorum
// error and leaves no key behind on the survivors.
func TestRedlockSurvivesMinorityLoss(t *testing.T) {
	for killed := 0; killed <= 5; killed++ {
		t.Run(fmt.Sprintf("%d killed", killed), func(t *testing.T) {
			servers, stores, clients := fiveMasters(t)
			for i := 0; i < killed; i++ {
				servers[i].Kill()
			}
			lock := redislock.NewRedLock(stores, "zerolock-test:redlock")
			lock.SetExpire(5)
			ok, err := lock.Acquire()
			if killed <= 2 {
				if !ok || err != nil {
					t.Fatalf("Acquire() = %v, %v; want true", ok, err)
				}
				if v := lock.Validity(); v <= 4*time.Second || v > 5500*time.Millisecond {
					t.Fatalf("Validity() = %v, want about 5.5s", v)
				}
				if ok, err := lock.Release(); !ok || err != nil {
					t.Fatalf("Release() = %v, %v", ok, err)
				}
				return
			}
			var qe *redislock.QuorumError
			if ok || !errors.Is(err, redislock.ErrQuorum) || !errors.As(err, &qe) || len(qe.Nodes) != 5 {
				t.Fatalf("Acquire() = %v, %v; want the quorum error with 5 node outcomes", ok, err)
			}
			for i := killed; i < 5; i++ {
				if n := clients[i].Exists(context.Background(), "zerolock-test:redlock").Val(); n != 0 {
					t.Fatalf("a failed acquire left the key on surviving node %d", i)
				}
			}
			if lock.Validity() != 0 {
				t.Fatal("Validity() of a lock not held is not 0")
			}
		})
	}
}

// TestRedlockMajorityOfFreeNodes: for all 32 ways another owner may hold
// the key on some of 5 masters, the lock is acquired exactly when at least
// 3 are free, and a refusal is (false, nil) that leaves the other owner's
// keys alone and none of ours.
func TestRedlockMajorityOfFreeNodes(t *testing.T) {
	_, stores, clients := fiveMasters(t)
	ctx := context.Background()
	for mask := 0; mask < 32; mask++ {
		key := fmt.Sprintf("zerolock-test:redlock-mask:%d", mask)
		free := 0
		for i, c := range clients {
			if mask&(1<<i) != 0 {
				c.Set(ctx, key, "other-owner", time.Minute)
			} else {
				free++
			}
		}
		lock := redislock.NewRedLock(stores, key)
		lock.SetExpire(5)
		ok, err := lock.Acquire()
		if err != nil || ok != (free >= 3) {
			t.Fatalf("mask %05b (%d free): Acquire() = %v, %v; want %v, nil", mask, free, ok, err, free >= 3)
		}
		for i, c := range clients {
			got := c.Get(ctx, key).Val()
			switch {
			case mask&(1<<i) != 0 && got != "other-owner":
				t.Fatalf("mask %05b: node %d's other owner was overwritten: %q", mask, i, got)
			case mask&(1<<i) == 0 && !ok && got != "":
				t.Fatalf("mask %05b: a refused acquire left a key on node %d", mask, i)
			}
		}
		if ok {
			if released, err := lock.Release(); !released || err != nil {
				t.Fatalf("mask %05b: Release() = %v, %v", mask, released, err)
			}
		}
	}
}

// TestRedlockSlowMinority: 200 ms of added latency on 2 of 5 masters. The
// acquisition completes within the node timeout, and the mutual-exclusion
// workload shows no overlap.
func TestRedlockSlowMinority(t *testing.T) {
	var stores []redislock.Store
	for i := 0; i < 5; i++ {
		srv := redistest.Start(t)
		addr := srv.Addr()
		if i < 2 {
			p := faultproxy.Start(t, addr)
			p.SetLatency(200 * time.Millisecond)
			addr = p.Addr()
		}
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		stores = append(stores, c)
	}
	lock := redislock.NewRedLock(stores, "zerolock-test:redlock-slow", redislock.WithNodeTimeout(50*time.Millisecond))
	lock.SetExpire(5)
	start := time.Now()
	if ok, err := lock.Acquire(); !ok || err != nil {
		t.Fatalf("Acquire() with 2 slow nodes = %v, %v", ok, err)
	}
	if d := time.Since(start); d > 150*time.Millisecond {
		t.Fatalf("Acquire() took %v, past the 50ms node timeout (with margin)", d)
	}
	_, _ = lock.Release()

	const workers = 10
	deadline := time.Now().Add(2 * time.Second)
	var (
		counter  int
		acquired atomic.Int64
		inside   atomic.Int32
		wg       sync.WaitGroup
	)
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := redislock.NewRedLock(stores, "zerolock-test:redlock-mutex", redislock.WithNodeTimeout(50*time.Millisecond))
			l.SetExpire(5)
			for time.Now().Before(deadline) {
				ok, err := l.Acquire()
				if err != nil || !ok {
					continue
				}
				if inside.Add(1) != 1 {
					t.Error("two Redlock holders at once")
				}
				counter++
				acquired.Add(1)
				inside.Add(-1)
				_, _ = l.Release()
			}
		}()
	}
	wg.Wait()
	if int64(counter) != acquired.Load() || counter == 0 {
		t.Fatalf("counter %d vs %d acquisitions", counter, acquired.Load())
	}
	t.Logf("%d Redlock acquisitions in 2s with 2 of 5 nodes 200ms away", counter)
}
