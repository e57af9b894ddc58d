package redislock_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// backend builds locks on one kind of store.
type backend struct {
	name    string
	newLock func(key string, opts ...redislock.Option) *redislock.RedisLock
	store   func() redislock.Store
}

// backends returns the two stores a user can hand the lock, both on srv:
// go-zero's *redis.Redis and a go-redis client.
func backends(t *testing.T, srv *redistest.Server) []backend {
	t.Helper()
	zstore := newGoZeroStore(t, srv)
	client := srv.Client(t)
	return []backend{
		{"go-zero", func(key string, opts ...redislock.Option) *redislock.RedisLock {
			return redislock.NewRedisLock(zstore, key, opts...)
		}, func() redislock.Store { return redislock.GoZeroStore(zstore) }},
		{"go-redis", func(key string, opts ...redislock.Option) *redislock.RedisLock {
			return redislock.New(client, key, opts...)
		}, func() redislock.Store { return client }},
	}
}

// eachBackend runs f once per backend, each with its own key.
func eachBackend(t *testing.T, srv *redistest.Server,
	f func(t *testing.T, b backend, admin *redis.Client, key string)) {
	t.Helper()
	admin := srv.Client(t)
	for _, b := range backends(t, srv) {
		t.Run(b.name, func(t *testing.T) {
			f(t, b, admin, "zerolock-test:"+t.Name())
		})
	}
}

// newGoZeroStore returns go-zero's store for srv. DisableIdentity keeps
// go-zero from sending CLIENT SETINFO, which redis-server before 7.2 rejects
// and go-zero's breaker counts as a failure on every new connection;
// NonBlock lets it be built for a server that is down.
func newGoZeroStore(t *testing.T, srv *redistest.Server) *zredis.Redis {
	t.Helper()
	return zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	})
}

// newZeroCluster is a go-zero cluster store that is never dialled.
func newZeroCluster() *zredis.Redis {
	return zredis.New("127.0.0.1:1", zredis.Cluster())
}

// inBackground runs a waiting acquire in a goroutine and delivers its
// outcome: nil when it got the lock, context.DeadlineExceeded when its
// wait passed first, else its error.
func inBackground(acquire func() (bool, error)) <-chan error {
	got := make(chan error, 1)
	go func() {
		ok, err := acquire()
		if err == nil && !ok {
			err = context.DeadlineExceeded
		}
		got <- err
	}()
	return got
}
