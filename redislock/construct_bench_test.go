package redislock_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock"
)

// BenchmarkConstruct measures building a lock, which does no I/O: New on a
// go-redis client, NewRedisLock on go-zero's store, and a backend's
// NewLocker, which the middleware calls for every request.
func BenchmarkConstruct(b *testing.B) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	b.Cleanup(func() { _ = client.Close() })
	zstore := zredis.New("127.0.0.1:1", zredis.WithIdentity())
	b.Run("New/go-redis", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = redislock.New(client, "bench:construct")
		}
	})
	b.Run("NewRedisLock/go-zero", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			_ = redislock.NewRedisLock(zstore, "bench:construct")
		}
	})
	for name, store := range map[string]redislock.Store{"go-redis": client, "go-zero": redislock.GoZeroStore(zstore)} {
		backend := redislock.NewBackend(store)
		b.Run("NewLocker/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				_ = backend.NewLocker("bench:construct", zerolock.LockerOptions{})
			}
		})
	}
}
