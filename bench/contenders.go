package main

import (
	"context"
	"errors"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock"
)

// hold is how long a waiter keeps the lock once it has it.
const hold = time.Millisecond

// A waiter blocks until it holds the lock, then releases it.
type waiter interface {
	acquire(ctx context.Context) error
	release(ctx context.Context) error
}

// A contender makes one waiter per goroutine on key.
type contender struct {
	name      string
	newWaiter func(client *redis.Client, key string) waiter
}

var handoffContenders = []contender{
	{"zerolock", func(c *redis.Client, key string) waiter {
		l := redislock.New(c, key)
		l.SetExpire(5)
		return zerolockWaiter{l}
	}},
	{"bsm LinearBackoff(10ms)", func(c *redis.Client, key string) waiter {
		return &bsmWaiter{client: bsm.New(c), key: key}
	}},
	{"redsync defaults", func(c *redis.Client, key string) waiter {
		return &redsyncWaiter{mutex: redsync.New(goredis.NewPool(c)).NewMutex(key)}
	}},
}

type zerolockWaiter struct{ lock *redislock.RedisLock }

func (w zerolockWaiter) acquire(ctx context.Context) error {
	ok, err := w.lock.AcquireWaitCtx(ctx, 0)
	if err == nil && !ok {
		err = errors.New("not acquired")
	}
	return err
}

func (w zerolockWaiter) release(ctx context.Context) error {
	_, err := w.lock.ReleaseCtx(ctx)
	return err
}

type bsmWaiter struct {
	client *bsm.Client
	key    string
	lock   *bsm.Lock
}

func (w *bsmWaiter) acquire(ctx context.Context) error {
	lock, err := w.client.Obtain(ctx, w.key, 5*time.Second,
		&bsm.Options{RetryStrategy: bsm.LinearBackoff(10 * time.Millisecond)})
	w.lock = lock
	return err
}

func (w *bsmWaiter) release(ctx context.Context) error {
	return w.lock.Release(ctx)
}

type redsyncWaiter struct{ mutex *redsync.Mutex }

// acquire retries redsync's own retry loop (32 tries, 50-250 ms apart, by
// default) until the context ends, so a waiter never gives up.
func (w *redsyncWaiter) acquire(ctx context.Context) error {
	for {
		err := w.mutex.LockContext(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
	}
}

func (w *redsyncWaiter) release(ctx context.Context) error {
	_, err := w.mutex.UnlockContext(ctx)
	return err
}
