package redislock_test

import (
	"context"
	"testing"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/locktest"
	"github.com/zerolock/zerolock/redislock"
)

// defaultGoZeroStore is go-zero's store for srv as a service configures it
// by default: identity on, so go-zero sends CLIENT SETINFO on every new
// connection. Only servers that accept it (Redis 7.2 and later, Valkey)
// can take it; newGoZeroStore is the one for the system's 7.0.
func defaultGoZeroStore(srv *redistest.Server) *zredis.Redis {
	return zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true})
}

// TestConformanceOnServers runs the conformance suite on NewBackend on
// Valkey 9 and Redis 8, over a go-redis client and over go-zero's store
// with its default configuration (identity on), as
// TestConformanceRedisNode and TestConformanceRedisNodeGoZero do on the
// system's redis-server. The four suites run in parallel (each check on
// keys of its own), as they mostly wait for expiries.
func TestConformanceOnServers(t *testing.T) {
	redistest.EachFlavour(t, func(t *testing.T, srv *redistest.Server) {
		t.Parallel()
		t.Logf("on %s", srv.Version())
		t.Run("go-redis", func(t *testing.T) {
			t.Parallel()
			backend := redislock.NewBackend(srv.Client(t))
			locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, storeOptions)
		})
		t.Run("go-zero", func(t *testing.T) {
			t.Parallel()
			backend := redislock.NewBackend(redislock.GoZeroStore(defaultGoZeroStore(srv)))
			locktest.Run(t, func(*testing.T) zerolock.Backend { return backend }, storeOptions)
		})
	}, redistest.NewFlavours()...)
}

// TestGoZeroIdentityOnServers: Valkey 9 and Redis 8 accept the CLIENT
// SETINFO go-zero sends by default, so CheckGoZeroStore passes a store
// without DisableIdentity and NewRedisLock's locks work on it, where the
// system's 7.0 refuses it (TestIdentityOnRealServer).
func TestGoZeroIdentityOnServers(t *testing.T) {
	redistest.EachFlavour(t, func(t *testing.T, srv *redistest.Server) {
		ctx := context.Background()
		if err := srv.Client(t).Do(ctx, "client", "setinfo", "lib-ver", "1").Err(); err != nil {
			t.Fatalf("%s rejects CLIENT SETINFO: %v", srv.Version(), err)
		}
		store := defaultGoZeroStore(srv)
		if err := redislock.CheckGoZeroStore(ctx, store); err != nil {
			t.Fatalf("CheckGoZeroStore on %s with identity on = %v, want nil", srv.Version(), err)
		}
		lock := redislock.NewRedisLock(store, "zerolock-test:"+t.Name())
		mustAcquire(t, lock, true)
		mustAcquire(t, redislock.NewRedisLock(store, "zerolock-test:"+t.Name()), false)
		mustRelease(t, lock, true)
	}, redistest.NewFlavours()...)
}
