package redislock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/locktest"
	"github.com/zerolock/zerolock/redislock"
)

// multiOptions are what a MultiLock claims: a Waiter, a Watcher and a
// Refresher, with expiry kept to the millisecond; it is no TTLer and no
// Fencer.
var multiOptions = locktest.Options{
	Expiry: 300 * time.Millisecond,
	Waiter: true, Watcher: true, Refresher: true,
}

// multiBackend makes, for the suite's key, a MultiLock on it and a second
// key named by second.
type multiBackend struct {
	t      *testing.T
	store  redislock.Store
	second func(t *testing.T, key string) string
}

func (b multiBackend) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	keys := []string{key, b.second(b.t, key)}
	m, err := redislock.NewMultiLock(b.store, keys, redislock.WithExpiry(o.Expiry), redislock.WithTolerance(0))
	if err != nil {
		b.t.Fatalf("NewMultiLock(%q) = %v", keys, err)
	}
	return m
}

// nextKey is the second key on a single server: any other name.
func nextKey(_ *testing.T, key string) string {
	return key + ":second"
}

// TestConformanceMultiLockNode runs the conformance suite on MultiLocks of
// two keys on one redis-server, over a go-redis client and go-zero's store.
func TestConformanceMultiLockNode(t *testing.T) {
	srv := redistest.Start(t)
	for _, b := range backends(t, srv) {
		t.Run(b.name, func(t *testing.T) {
			locktest.Run(t, func(t *testing.T) zerolock.Backend {
				return multiBackend{t: t, store: b.store(), second: nextKey}
			}, multiOptions)
		})
	}
}

// TestConformanceMultiLockCluster runs the conformance suite on MultiLocks
// of two keys in different slots of the shared Redis Cluster (the
// slot-by-slot path), over a go-redis cluster client.
func TestConformanceMultiLockCluster(t *testing.T) {
	client := redistest.SharedCluster(t).Client(t)
	locktest.Run(t, func(t *testing.T) zerolock.Backend {
		return multiBackend{t: t, store: client, second: otherSlotKey(client)}
	}, multiOptions)
}

// otherSlotKey names a second key in a slot other than key's, as the
// cluster computes slots.
func otherSlotKey(client *redis.ClusterClient) func(t *testing.T, key string) string {
	return func(t *testing.T, key string) string {
		ctx := context.Background()
		slot := client.ClusterKeySlot(ctx, key).Val()
		for i := 0; ; i++ {
			other := fmt.Sprintf("%s:second:%d", key, i)
			s, err := client.ClusterKeySlot(ctx, other).Result()
			if err != nil {
				t.Fatal(err)
			}
			if s != slot {
				return other
			}
		}
	}
}
