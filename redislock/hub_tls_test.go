package redislock_test

import (
	"context"
	"testing"
	"time"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestGoZeroTLSWaiterIsWoken: on a go-zero store over TLS (RedisConf.Tls),
// a waiter whose back-off would sleep at least 5 s is woken by the release,
// through a subscription made over TLS as the store's own connections are.
// Before, the subscriber spoke plain RESP (with the password, had there
// been one) to the TLS port, its probe failed, and every waiter of such a
// store slept its whole back-off.
func TestGoZeroTLSWaiterIsWoken(t *testing.T) {
	srv, tlsAddr := redistest.StartTLS(t)
	admin := srv.Client(t)
	store := zredis.MustNewRedis(zredis.RedisConf{
		Host: tlsAddr, Type: zredis.NodeType, Tls: true, NonBlock: true, DisableIdentity: true,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := store.SetCtx(ctx, "zerolock-test:tls-check", "1"); err != nil {
		t.Fatalf("go-zero's TLS store cannot reach the TLS port: %v", err)
	}
	b := backend{"go-zero-tls", func(key string, opts ...redislock.Option) *redislock.RedisLock {
		return redislock.NewRedisLock(store, key, opts...)
	}, func() redislock.Store { return redislock.GoZeroStore(store) }}
	wakesLongBackoff(t, b, admin, admin, "zerolock-test:"+t.Name(), false)
}
