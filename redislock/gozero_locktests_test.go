// This file is go-zero's own RedisLock test, core/stores/redis/redislock_test.go
// of github.com/zeromicro/go-zero v1.10.3 (the version in go.mod), copied
// verbatim below this comment except for its package clause, which was
// "package redis". The names it uses unqualified from go-zero's package,
// Redis, NewRedisLock and the test helper runOnRedis, are provided by
// gozero_locktests_harness_test.go: NewRedisLock is zerolock's drop-in,
// and runOnRedis runs each test body on miniredis and on a real
// redis-server (7.0 here, Debian 12's), both with go-zero's default
// RedisConf, identity on. TestGoZeroLockTestsAreVerbatim checks this file
// against the one in the module cache: on a go-zero upgrade, copy the new
// version's file below this comment again.

package redislock_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/zeromicro/go-zero/core/stringx"
)

func TestRedisLock(t *testing.T) {
	testFn := func(ctx context.Context) func(client *Redis) {
		return func(client *Redis) {
			key := stringx.Rand()
			firstLock := NewRedisLock(client, key)
			firstLock.SetExpire(5)
			firstAcquire, err := firstLock.Acquire()
			assert.Nil(t, err)
			assert.True(t, firstAcquire)

			secondLock := NewRedisLock(client, key)
			secondLock.SetExpire(5)
			againAcquire, err := secondLock.Acquire()
			assert.Nil(t, err)
			assert.False(t, againAcquire)

			release, err := firstLock.Release()
			assert.Nil(t, err)
			assert.True(t, release)

			endAcquire, err := secondLock.Acquire()
			assert.Nil(t, err)
			assert.True(t, endAcquire)
		}
	}

	t.Run("normal", func(t *testing.T) {
		runOnRedis(t, testFn(nil))
	})

	t.Run("withContext", func(t *testing.T) {
		runOnRedis(t, testFn(context.Background()))
	})
}

func TestRedisLock_Expired(t *testing.T) {
	runOnRedis(t, func(client *Redis) {
		key := stringx.Rand()
		redisLock := NewRedisLock(client, key)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := redisLock.AcquireCtx(ctx)
		assert.NotNil(t, err)
	})

	runOnRedis(t, func(client *Redis) {
		key := stringx.Rand()
		redisLock := NewRedisLock(client, key)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := redisLock.ReleaseCtx(ctx)
		assert.NotNil(t, err)
	})
}
