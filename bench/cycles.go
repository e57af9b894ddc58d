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

// cycleContenders make a new lock for every cycle with the default options
// and SetExpire, as the middleware makes one per request and as
// ../shared/peerbench measures (issue 30): the cost of building a lock is
// part of each cycle. The floor mints nothing: it is the protocol alone.
var cycleContenders = []cycleContender{
	{rawFloor, func(c clients, key string) cycler {
		return &floor{client: c.redis, key: key, token: "floor-" + key}
	}},
	{onGoRedis, func(c clients, key string) cycler {
		return cycleFunc(func(ctx context.Context) (bool, error) {
			l := redislock.New(c.redis, key)
			l.SetExpire(expirySeconds)
			return lockCycle(ctx, l.AcquireCtx, l.ReleaseCtx)
		})
	}},
	{quietOnRedis, func(c clients, key string) cycler {
		return cycleFunc(func(ctx context.Context) (bool, error) {
			l := redislock.New(c.redis, key, redislock.WithoutWakeups())
			l.SetExpire(expirySeconds)
			return lockCycle(ctx, l.AcquireCtx, l.ReleaseCtx)
		})
	}},
	{dropIn, func(c clients, key string) cycler {
		return cycleFunc(func(ctx context.Context) (bool, error) {
			l := redislock.NewRedisLock(c.gozero, key)
			l.SetExpire(expirySeconds)
			return lockCycle(ctx, l.AcquireCtx, l.ReleaseCtx)
		})
	}},
	{replaced, func(c clients, key string) cycler {
		return cycleFunc(func(ctx context.Context) (bool, error) {
			l := zredis.NewRedisLock(c.gozero, key)
			l.SetExpire(expirySeconds)
			return lockCycle(ctx, l.AcquireCtx, l.ReleaseCtx)
		})
	}},
	{"bsm/redislock", func(c clients, key string) cycler {
		return &bsmCycler{client: bsm.New(c.redis), key: key}
	}},
	{"redsync", func(c clients, key string) cycler {
		rs := redsync.New(goredis.NewPool(c.redis))
		return cycleFunc(func(ctx context.Context) (bool, error) {
			m := rs.NewMutex(key, redsync.WithTries(1), redsync.WithExpiry(expiry))
			return (&redsyncCycler{mutex: m}).cycle(ctx)
		})
	}},
}

// expirySeconds is expiry in SetExpire's whole seconds.
const expirySeconds = int(expiry / time.Second)

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
	return lockCycle(ctx, l.acquire, l.release)
}

// lockCycle acquires once and, when it got the lock, releases it.
func lockCycle(ctx context.Context, acquire, release func(context.Context) (bool, error)) (bool, error) {
	ok, err := acquire(ctx)
	if err != nil || !ok {
		return false, err
	}
	_, err = release(ctx)
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
