package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

func watchedLock(t *testing.T, b backend, key string) (*redislock.RedisLock, context.Context) {
	t.Helper()
	lock := b.newLock(key, redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
	mustAcquire(t, lock, true)
	return lock, lock.Watch(context.Background(), zerolock.RenewEvery(100*time.Millisecond))
}

// waitDone waits for ctx to end within d and returns its cause.
func waitDone(t *testing.T, ctx context.Context, d time.Duration) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d):
		t.Fatalf("lock context not cancelled within %v", d)
		return nil
	}
}

// TestWatchdogKeepsLockAlive: a 1 s lock is kept for 5 s while a contender
// tries every 50 ms and never gets in.
func TestWatchdogKeepsLockAlive(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key, redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
		mustAcquire(t, lock, true)
		lockCtx := lock.Watch(context.Background())
		contender := b.newLock(key)
		contender.SetExpire(1)
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			mustAcquire(t, contender, false)
		}
		if lockCtx.Err() != nil {
			t.Fatalf("lock context ended while the lock was kept: %v", context.Cause(lockCtx))
		}
		mustRelease(t, lock, true)
		if cause := waitDone(t, lockCtx, time.Second); !errors.Is(cause, zerolock.ErrReleased) {
			t.Fatalf("cause after Release = %v, want ErrReleased", cause)
		}
		mustAcquire(t, contender, true)
		mustRelease(t, contender, true)
	})
}

// TestWatchdogLostLock: deleting, overwriting or shortening the key from an
// admin connection cancels the lock's context at the first renewal after
// it, and the watchdog never re-creates or overwrites the key.
func TestWatchdogLostLock(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		for _, tc := range []struct {
			name    string
			tamper  func() error
			present string // the value the key must keep, "" for gone
		}{
			{"deleted", func() error { return admin.Del(ctx, key).Err() }, ""},
			{"overwritten", func() error { return admin.Set(ctx, key, "someone-else", time.Minute).Err() }, "someone-else"},
			// Shortened below the renewal interval: the key expires before the
			// next renewal, which must then not bring it back.
			{"pexpired", func() error { return admin.PExpire(ctx, key, time.Millisecond).Err() }, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				calls := redistest.Calls(t, admin, "eval", "evalsha")
				lock, lockCtx := watchedLock(t, b, key)
				// Tamper only after the watchdog's first renewal (the acquire
				// itself runs no script): one in flight could still find the
				// token and, rightly, restore a shortened TTL.
				for deadline := time.Now().Add(2 * time.Second); redistest.Calls(t, admin, "eval", "evalsha") == calls; {
					if time.Now().After(deadline) {
						t.Fatal("the watchdog never renewed")
					}
					time.Sleep(time.Millisecond)
				}
				before := redistest.Calls(t, admin, "eval", "evalsha")
				if err := tc.tamper(); err != nil {
					t.Fatal(err)
				}
				// The loss is signalled by the first renewal that runs after the
				// tamper (one more may have been in flight during it), counted
				// in scripts rather than time, which a loaded machine stretches.
				if cause := waitDone(t, lockCtx, 5*time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
					t.Fatalf("cause = %v, want ErrLockLost", cause)
				}
				if renewals := redistest.Calls(t, admin, "eval", "evalsha") - before; renewals > 2 {
					t.Fatalf("the loss was signalled after %d renewals, want at most 2", renewals)
				}
				time.Sleep(300 * time.Millisecond) // three renewal intervals: none may touch the key
				if got, err := admin.Get(ctx, key).Result(); tc.present == "" && err != redis.Nil {
					t.Fatalf("the watchdog re-created the key: %q, %v", got, err)
				} else if tc.present != "" && got != tc.present {
					t.Fatalf("the key holds %q, want %q untouched", got, tc.present)
				}
				mustRelease(t, lock, false)
				admin.Del(ctx, key)
			})
		}
	})
}

// TestWatchdogRedisDown: with the server gone, the context is cancelled
// with ErrRenewFailed before the lock could have expired in Redis.
func TestWatchdogRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key, redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
		mustAcquire(t, lock, true)
		lockCtx := lock.Watch(context.Background(), zerolock.RenewEvery(100*time.Millisecond))
		// Renewals succeed for a while, then the server goes.
		time.Sleep(250 * time.Millisecond)
		lastRenewalBound := time.Now()
		srv.Kill()
		cause := waitDone(t, lockCtx, 3*time.Second)
		cancelled := time.Now()
		if !errors.Is(cause, zerolock.ErrRenewFailed) {
			t.Fatalf("cause = %v, want ErrRenewFailed", cause)
		}
		// The last successful renewal was sent before lastRenewalBound, so
		// Redis keeps the key at most until then + 1s: the signal must come
		// before that.
		if cancelled.After(lastRenewalBound.Add(time.Second)) {
			t.Fatalf("cancelled %v after the server went, later than the lock's expiry", cancelled.Sub(lastRenewalBound))
		}
		srv.Restart(t)
	})
}

func TestWatchdogMaxHoldAndParent(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key, redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
		mustAcquire(t, lock, true)
		lockCtx := lock.Watch(context.Background(), zerolock.MaxHold(200*time.Millisecond))
		if cause := waitDone(t, lockCtx, 2*time.Second); !errors.Is(cause, zerolock.ErrMaxHold) {
			t.Fatalf("cause = %v, want ErrMaxHold", cause)
		}
		mustRelease(t, lock, true)

		parent, cancel := context.WithCancel(context.Background())
		mustAcquire(t, lock, true)
		lockCtx = lock.Watch(parent)
		if again := lock.Watch(parent); again != lockCtx {
			t.Fatal("a second Watch started another watchdog")
		}
		cancel()
		if cause := waitDone(t, lockCtx, time.Second); !errors.Is(cause, context.Canceled) {
			t.Fatalf("cause after the parent ended = %v, want context.Canceled", cause)
		}
		mustRelease(t, lock, true)
	})
}

func TestApplyWatchOptions(t *testing.T) {
	got := zerolock.ApplyWatchOptions(zerolock.RenewEvery(time.Second), zerolock.MaxHold(time.Minute))
	if got.RenewEvery != time.Second || got.MaxHold != time.Minute {
		t.Fatalf("settings: %+v", got)
	}
	if got := zerolock.ApplyWatchOptions(); got != (zerolock.WatchSettings{}) {
		t.Fatalf("no options: %+v", got)
	}
}

// TestWatchdogHungServer: with the server paused (SIGSTOP), the lock's
// context ends before Redis could have expired the key, although the
// renewal in flight is stuck; Release keeps to its own context.
func TestWatchdogHungServer(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	lock := redislock.New(client, "zerolock-test:hung", redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
	mustAcquire(t, lock, true)
	lockCtx := lock.Watch(context.Background(), zerolock.RenewEvery(100*time.Millisecond))
	time.Sleep(250 * time.Millisecond)
	paused := time.Now() // every renewal the server answered was sent before this
	srv.Pause()
	t.Cleanup(srv.Resume)
	cause := waitDone(t, lockCtx, 3*time.Second)
	if !errors.Is(cause, zerolock.ErrRenewFailed) {
		t.Fatalf("cause = %v, want ErrRenewFailed", cause)
	}
	if late := time.Since(paused); late >= time.Second {
		t.Fatalf("cancelled %v after the server hung: past the 1s the key could live", late)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _ = lock.ReleaseCtx(ctx)
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Fatalf("ReleaseCtx(200ms) on a hung server took %v", d)
	}
}

// TestReleaseWithEndedContextStopsWatchdog: a release that cannot be sent
// still stops the renewals.
func TestReleaseWithEndedContextStopsWatchdog(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		lock := b.newLock(key, redislock.WithExpiry(300*time.Millisecond), redislock.WithTolerance(0))
		mustAcquire(t, lock, true)
		lockCtx := lock.Watch(context.Background())
		ended, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := lock.ReleaseCtx(ended); !errors.Is(err, context.Canceled) {
			t.Fatalf("ReleaseCtx(canceled) = %v", err)
		}
		if cause := waitDone(t, lockCtx, time.Second); !errors.Is(cause, zerolock.ErrReleased) {
			t.Fatalf("cause = %v, want ErrReleased", cause)
		}
		// No renewal keeps the key alive any more: it expires.
		deadline := time.Now().Add(2 * time.Second)
		for admin.Exists(context.Background(), key).Val() == 1 {
			if time.Now().After(deadline) {
				t.Fatal("the key outlived its 300ms: still renewed after Release")
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestWatchOfLockNotHeld: Watch on a lock never acquired, or released and
// since taken by another, ends at once with ErrLockLost.
func TestWatchOfLockNotHeld(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		fresh := b.newLock(key)
		fresh.SetExpire(30)
		if cause := waitDone(t, fresh.Watch(context.Background()), time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
			t.Fatalf("Watch of a lock never acquired: cause %v, want ErrLockLost", cause)
		}
		mustAcquire(t, fresh, true)
		admin.Set(context.Background(), key, "someone-else", time.Minute) // lost before Watch
		if cause := waitDone(t, fresh.Watch(context.Background()), time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
			t.Fatalf("Watch of a lock lost before: cause %v, want ErrLockLost within a second, not after 10s", cause)
		}
		admin.Del(context.Background(), key)
	})
}
