package redislock_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestOptionPolicy: one rule for every constructor and every option. An
// option that a kind of lock has no use for is refused with an error
// wrapping ErrOptionNotApplicable that names it: by the constructor when it
// returns an error, otherwise by the lock's first acquire, which writes
// nothing. The refusal does not depend on the option's arguments:
// WithReplicaAcks asks for no replica here, so that a kind that takes it
// can acquire on a server without replicas. Every option a kind takes is
// accepted: the lock acquires.
func TestOptionPolicy(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	goZero := newGoZeroStore(t, srv)
	lockerOptions := zerolock.LockerOptions{Expiry: time.Second}

	options := []struct {
		name string
		opt  redislock.Option
	}{
		{"WithExpiry", redislock.WithExpiry(time.Second)},
		{"WithTolerance", redislock.WithTolerance(100 * time.Millisecond)},
		{"WithFencing", redislock.WithFencing()},
		{"WithReplicaAcks", redislock.WithReplicaAcks(0, 10*time.Millisecond)},
		{"WithBackoff", redislock.WithBackoff(time.Millisecond, 10*time.Millisecond)},
		{"WithoutWakeups", redislock.WithoutWakeups()},
		{"WithDeadlineGuard", redislock.WithDeadlineGuard()},
		{"WithName", redislock.WithName(t.Name())},
		{"WithNodeTimeout", redislock.WithNodeTimeout(time.Second)},
	}

	// A constructor makes a lock on key with opt and returns its acquire
	// and release, or the constructor's own error.
	type made struct {
		acquire, release func(context.Context) (bool, error)
	}
	ofLocker := func(l zerolock.Locker) made { return made{l.AcquireCtx, l.ReleaseCtx} }
	constructors := []struct {
		name    string
		refuses []string
		make    func(key string, opt redislock.Option) (made, error)
	}{
		{"New", []string{"WithNodeTimeout"}, func(key string, opt redislock.Option) (made, error) {
			return ofLocker(redislock.New(client, key, opt)), nil
		}},
		{"NewRedisLock", []string{"WithNodeTimeout"}, func(key string, opt redislock.Option) (made, error) {
			return ofLocker(redislock.NewRedisLock(goZero, key, opt)), nil
		}},
		{"NewRedLock", []string{"WithFencing", "WithBackoff"}, func(key string, opt redislock.Option) (made, error) {
			return ofLocker(redislock.NewRedLock([]redislock.Store{client}, key, opt)), nil
		}},
		{"NewSemaphore", []string{"WithFencing", "WithReplicaAcks", "WithNodeTimeout"}, func(key string, opt redislock.Option) (made, error) {
			s, err := redislock.NewSemaphore(client, key, 2, opt)
			if err != nil {
				return made{}, err
			}
			return ofLocker(s), nil
		}},
		{"NewMultiLock", []string{"WithFencing", "WithReplicaAcks", "WithNodeTimeout"}, func(key string, opt redislock.Option) (made, error) {
			m, err := redislock.NewMultiLock(client, []string{key, key + ":second"}, opt)
			if err != nil {
				return made{}, err
			}
			return ofLocker(m), nil
		}},
		{"NewRWLock", []string{"WithReplicaAcks", "WithNodeTimeout"}, func(key string, opt redislock.Option) (made, error) {
			l := redislock.NewRWLock(client, key, opt)
			return made{l.LockCtx, l.UnlockCtx}, nil
		}},
		{"NewRWLock read side", []string{"WithReplicaAcks", "WithNodeTimeout"}, func(key string, opt redislock.Option) (made, error) {
			l := redislock.NewRWLock(client, key, opt)
			return made{l.RLockCtx, l.RUnlockCtx}, nil
		}},
		{"NewBackend NewLocker", []string{"WithNodeTimeout"}, func(key string, opt redislock.Option) (made, error) {
			return ofLocker(redislock.NewBackend(client, opt).NewLocker(key, lockerOptions)), nil
		}},
		// A backend's WithFencing is for its RedisLocks: its semaphores, which
		// the middleware's limit mode makes, go without it.
		{"NewBackend NewSemaphore", []string{"WithReplicaAcks", "WithNodeTimeout"}, func(key string, opt redislock.Option) (made, error) {
			s, err := redislock.NewBackend(client, opt).(zerolock.SemaphoreBackend).NewSemaphore(key, 2, lockerOptions)
			if err != nil {
				return made{}, err
			}
			return ofLocker(s), nil
		}},
		{"NewRedLockBackend NewLocker", []string{"WithFencing", "WithBackoff"}, func(key string, opt redislock.Option) (made, error) {
			return ofLocker(redislock.NewRedLockBackend([]redislock.Store{client}, opt).NewLocker(key, lockerOptions)), nil
		}},
		// The middleware and the interceptor run a backend's Check at
		// start-up: what its locks refuse fails there.
		{"NewBackend Check", []string{"WithNodeTimeout"}, func(key string, opt redislock.Option) (made, error) {
			b := redislock.NewBackend(client, opt)
			if err := b.(zerolock.Checker).Check(context.Background()); err != nil {
				return made{}, err
			}
			return ofLocker(b.NewLocker(key, lockerOptions)), nil
		}},
		{"NewRedLockBackend Check", []string{"WithFencing", "WithBackoff"}, func(key string, opt redislock.Option) (made, error) {
			b := redislock.NewRedLockBackend([]redislock.Store{client}, opt)
			if err := b.(zerolock.Checker).Check(context.Background()); err != nil {
				return made{}, err
			}
			return ofLocker(b.NewLocker(key, lockerOptions)), nil
		}},
	}

	ctx := context.Background()
	for _, c := range constructors {
		for _, o := range options {
			refused := slices.Contains(c.refuses, o.name)
			t.Run(c.name+"/"+o.name, func(t *testing.T) {
				key := "zerolock-test:option-policy:" + c.name + ":" + o.name
				lock, err := c.make(key, o.opt)
				if err == nil {
					var ok bool
					ok, err = lock.acquire(ctx)
					if ok {
						defer func() {
							if ok, err := lock.release(context.Background()); !ok || err != nil {
								t.Errorf("release = %v, %v", ok, err)
							}
						}()
					}
					if !refused && (!ok || err != nil) {
						t.Fatalf("acquire with %s = %v, %v; want it accepted and the lock held", o.name, ok, err)
					}
				}
				if !refused {
					if err != nil {
						t.Fatalf("%s refused %s, which it takes: %v", c.name, o.name, err)
					}
					return
				}
				if !errors.Is(err, redislock.ErrOptionNotApplicable) || !strings.Contains(err.Error(), o.name) {
					t.Fatalf("%s with %s = %v; want a refusal naming it, wrapping ErrOptionNotApplicable", c.name, o.name, err)
				}
				// A misconfiguration, which FailOpen never serves unlocked.
				if !errors.Is(err, zerolock.ErrMisconfigured) {
					t.Errorf("the refusal of %s is not a zerolock.ErrMisconfigured: %v", o.name, err)
				}
				if o.name == "WithReplicaAcks" && !errors.Is(err, redislock.ErrReplicaAcksUnsupported) {
					t.Errorf("the refusal of WithReplicaAcks does not match ErrReplicaAcksUnsupported: %v", err)
				}
				if n := client.Exists(ctx, key, key+":second").Val(); n != 0 {
					t.Errorf("a refused lock wrote %d keys", n)
				}
			})
		}
	}
}
