package main

import (
	"context"
	"errors"
	"strconv"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	rawfloor "github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/redislock"
)

// expiry is the lock lifetime every contender asks for.
const expiry = 5 * time.Second

// A cycler tries a lock once and, when it got it, releases it.
type cycler interface {
	cycle(ctx context.Context) (acquired bool, err error)
}

// clients are the connections the contenders share.
type clients struct {
	redis   *redis.Client
	gozero  *zredis.Redis
	luaOnly *redis.Client // the Valkey scenarios' ACL user without DELIFEQ
}

// A cycleContender makes one cycler per goroutine, on key.
type cycleContender struct {
	name string
	new  func(c clients, key string) cycler
}

var cycleContenders = []cycleContender{
	{rawFloor, func(c clients, key string) cycler {
		return &floor{client: c.redis, key: key, token: "floor-" + key}
	}},
	{onGoRedis, func(c clients, key string) cycler {
		l := redislock.New(c.redis, key, redislock.WithExpiry(expiry), redislock.WithTolerance(0))
		return lockCycler{l.AcquireCtx, l.ReleaseCtx}
	}},
	{quietOnRedis, func(c clients, key string) cycler {
		l := redislock.New(c.redis, key, redislock.WithExpiry(expiry), redislock.WithTolerance(0),
			redislock.WithoutWakeups())
		return lockCycler{l.AcquireCtx, l.ReleaseCtx}
	}},
	{dropIn, func(c clients, key string) cycler {
		l := redislock.NewRedisLock(c.gozero, key, redislock.WithExpiry(expiry), redislock.WithTolerance(0))
		return lockCycler{l.AcquireCtx, l.ReleaseCtx}
	}},
	{replaced, func(c clients, key string) cycler {
		l := zredis.NewRedisLock(c.gozero, key)
		l.SetExpire(int(expiry / time.Second))
		return lockCycler{l.AcquireCtx, l.ReleaseCtx}
	}},
	{"bsm/redislock", func(c clients, key string) cycler {
		return &bsmCycler{client: bsm.New(c.redis), key: key}
	}},
	{"redsync", func(c clients, key string) cycler {
		m := redsync.New(goredis.NewPool(c.redis)).NewMutex(key, redsync.WithTries(1), redsync.WithExpiry(expiry))
		return &redsyncCycler{mutex: m}
	}},
}

type floor struct {
	client     *redis.Client
	key, token string
}

func (f *floor) cycle(ctx context.Context) (bool, error) {
	return rawfloor.Cycle(ctx, f.client, f.key, f.token, expiry)
}

type lockCycler struct {
	acquire, release func(context.Context) (bool, error)
}

func (l lockCycler) cycle(ctx context.Context) (bool, error) {
	ok, err := l.acquire(ctx)
	if err != nil || !ok {
		return false, err
	}
	_, err = l.release(ctx)
	return true, err
}

type bsmCycler struct {
	client *bsm.Client
	key    string
}

func (b *bsmCycler) cycle(ctx context.Context) (bool, error) {
	lock, err := b.client.Obtain(ctx, b.key, expiry, nil)
	if errors.Is(err, bsm.ErrNotObtained) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, lock.Release(ctx)
}

type redsyncCycler struct{ mutex *redsync.Mutex }

func (r *redsyncCycler) cycle(ctx context.Context) (bool, error) {
	if err := r.mutex.LockContext(ctx); err != nil {
		var taken *redsync.ErrTaken
		if errors.Is(err, redsync.ErrFailed) || errors.As(err, &taken) {
			return false, nil
		}
		return false, err
	}
	_, err := r.mutex.UnlockContext(ctx)
	return true, err
}

func keyFor(scenario string, goroutine int) string {
	return "bench:" + scenario + ":" + strconv.Itoa(goroutine)
}
