package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestCallsReturnByTheirDeadline: with the server stopped (SIGSTOP), every
// call returns by its context's deadline with the context's error, where
// the client alone would wait for its 3 s read timeout. Locks: on go-zero's
// store and a default go-redis client WithDeadlineGuard, and on a go-redis
// client with ContextTimeoutEnabled (which bounds calls itself) without it.
// After the server resumes, the lock is intact.
func TestCallsReturnByTheirDeadline(t *testing.T) {
	srv := redistest.Start(t)
	timed := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = timed.Close() })
	stores := append(backends(t, srv), backend{"go-redis-context-timeouts",
		func(key string, opts ...redislock.Option) *redislock.RedisLock {
			return redislock.New(timed, key, opts...)
		}, func() redislock.Store { return timed }})
	const deadline, margin = 150 * time.Millisecond, time.Second
	for _, b := range stores {
		t.Run(b.name, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			var opts []redislock.Option
			if b.name != "go-redis-context-timeouts" {
				opts = append(opts, redislock.WithDeadlineGuard())
			}
			holder, rival := b.newLock(key), b.newLock(key, opts...)
			holder.SetExpire(30)
			rival.SetExpire(30)
			mustAcquire(t, holder, true)

			srv.Pause()
			resumed := false
			defer func() {
				if !resumed {
					srv.Resume()
				}
			}()
			calls := map[string]func(context.Context) error{
				"AcquireCtx": func(ctx context.Context) error { _, err := rival.AcquireCtx(ctx); return err },
				"ReleaseCtx": func(ctx context.Context) error { _, err := rival.ReleaseCtx(ctx); return err },
				"TTL":        func(ctx context.Context) error { _, err := rival.TTL(ctx); return err },
				"AcquireWaitCtx": func(ctx context.Context) error {
					_, err := rival.AcquireWaitCtx(ctx, time.Minute)
					return err
				},
			}
			for name, call := range calls {
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				start := time.Now()
				err := call(ctx)
				took := time.Since(start)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("%s on a stopped server: %v, want the deadline's error", name, err)
				}
				if took > deadline+margin {
					t.Errorf("%s returned after %v, deadline %v", name, took, deadline)
				}
			}
			srv.Resume()
			resumed = true
			mustAcquire(t, rival, false)
			mustRelease(t, holder, true)
		})
	}
}
