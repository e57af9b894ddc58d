package redislock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// slowWinHook delays, by delay, the reply of every script that answered
// "OK" (the acquire scripts' "held by this token now"), after Redis ran
// it: a try that won, whose answer is still on its way when the caller's
// wait limit ends. It sends on delaying as a delay starts and on delivered
// as it ends.
type slowWinHook struct {
	delay     time.Duration
	armed     atomic.Bool
	delaying  chan struct{}
	delivered chan struct{}
}

func (h *slowWinHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *slowWinHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *slowWinHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if name := cmd.Name(); h.armed.Load() && (name == "evalsha" || name == "eval") {
			if c, ok := cmd.(*redis.Cmd); ok && c.Val() == "OK" {
				h.delaying <- struct{}{}
				time.Sleep(h.delay) // the winning reply is late: the test's point
				h.delivered <- struct{}{}
			}
		}
		return err
	}
}

// receive waits up to 10 s for a send on ch.
func receive(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s within 10 s", what)
	}
}

// TestWaitLimitCutsAWinningTry: when the wait limit ends a waiting
// acquire's try that Redis has run and won, but whose reply is late
// (WithDeadlineGuard returns by the deadline), AcquireWaitCtx does not
// answer "not acquired": it returns ErrWaitCutTry (also a
// context.DeadlineExceeded), the key holds the waiter's token, and the
// waiter's ReleaseCtx settles it. Before, the answer was false, nil, and
// the lock stayed held, by nobody who knew, until its expiry. For the
// mutex and the semaphore, which share the wait loop with the multi-key
// and read-write locks.
func TestWaitLimitCutsAWinningTry(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	hook := &slowWinHook{delay: 3 * time.Second, delaying: make(chan struct{}, 1), delivered: make(chan struct{}, 1)}
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	client.AddHook(hook)
	t.Cleanup(func() { _ = client.Close() })

	type waiter interface {
		AcquireWaitCtx(context.Context, time.Duration) (bool, error)
		ReleaseCtx(context.Context) (bool, error)
	}
	for _, tc := range []struct {
		name string
		// make returns a holder whose hold ends within 100 ms and a
		// waiter WithDeadlineGuard and a 30 s expiry.
		make func(key string) (holder, waiter waiter)
		held func(key string) bool
	}{
		{"mutex", func(key string) (waiter, waiter) {
			return redislock.New(admin, key, redislock.WithExpiry(100*time.Millisecond), redislock.WithTolerance(0)),
				redislock.New(client, key, redislock.WithDeadlineGuard(), redislock.WithExpiry(30*time.Second))
		}, func(key string) bool {
			n, err := admin.Exists(context.Background(), key).Result()
			return err == nil && n == 1
		}},
		{"semaphore", func(key string) (waiter, waiter) {
			holder, err := redislock.NewSemaphore(admin, key, 1, redislock.WithExpiry(100*time.Millisecond), redislock.WithTolerance(0))
			if err != nil {
				t.Fatal(err)
			}
			w, err := redislock.NewSemaphore(client, key, 1, redislock.WithDeadlineGuard(), redislock.WithExpiry(30*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			return holder, w
		}, func(key string) bool {
			n, err := admin.ZCard(context.Background(), key).Result()
			return err == nil && n == 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			holder, w := tc.make(key)
			if ok, err := holder.AcquireWaitCtx(context.Background(), time.Second); !ok || err != nil {
				t.Fatalf("holder: %v, %v", ok, err)
			}
			hook.armed.Store(true)
			// The holder's hold ends at 100 ms, the waiter's try then wins,
			// and its reply comes 3 s later: the 1.5 s wait limit cuts it.
			ok, err := w.AcquireWaitCtx(context.Background(), 1500*time.Millisecond)
			hook.armed.Store(false)
			if ok || !errors.Is(err, redislock.ErrWaitCutTry) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("AcquireWaitCtx() = %v, %v; want false, ErrWaitCutTry (the winning try's reply was late)", ok, err)
			}
			receive(t, hook.delaying, "winning try")
			receive(t, hook.delivered, "late reply") // the abandoned try is over
			if !tc.held(key) {
				t.Fatal("the late try did not take the lock: the test did not cut a winning try")
			}
			if ok, err := w.ReleaseCtx(context.Background()); !ok || err != nil {
				t.Fatalf("ReleaseCtx() after the cut try = %v, %v; want true, nil (it settles the hold)", ok, err)
			}
			if tc.held(key) {
				t.Fatal("the hold left by the cut try outlived the waiter's release")
			}
		})
	}
}
