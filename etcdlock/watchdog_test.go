package etcdlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
)

// waitCause waits, up to a generous bound, for ctx to end and returns its
// cause.
func waitCause(t *testing.T, ctx context.Context) error {
	t.Helper()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(15 * time.Second):
		t.Fatal("the watched context did not end")
		return nil
	}
}

// TestLostLockSignalled: the lease revoked or the key deleted by someone
// else ends the watched context with ErrLockLost, also when it happened
// before Watch.
func TestLostLockSignalled(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	revoke := func(t *testing.T, lock *etcdlock.Lock) {
		if _, err := admin.Revoke(testCtx(t), holderLease(t, admin, lock)); err != nil {
			t.Fatal(err)
		}
	}
	deleteKey := func(t *testing.T, lock *etcdlock.Lock) {
		if _, err := admin.Delete(testCtx(t), string(holderKey(t, admin, lock).Kvs[0].Key)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name        string
		lose        func(*testing.T, *etcdlock.Lock)
		beforeWatch bool
	}{
		{"lease revoked", revoke, false},
		{"key deleted", deleteKey, false},
		{"lease revoked before Watch", revoke, true},
		{"key deleted before Watch", deleteKey, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A long expiry: the loss, not an expiry, must end the context.
			lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithExpiry(30*time.Second))
			mustAcquire(t, lock)
			var watched context.Context
			if tc.beforeWatch {
				tc.lose(t, lock)
				watched = lock.Watch(testCtx(t))
			} else {
				watched = lock.Watch(testCtx(t))
				tc.lose(t, lock)
			}
			if cause := waitCause(t, watched); !errors.Is(cause, zerolock.ErrLockLost) {
				t.Fatalf("cause %v, want ErrLockLost", cause)
			}
			if ok, err := lock.ReleaseCtx(testCtx(t)); ok || err != nil {
				t.Fatalf("release of the lost lock: %v, %v; want false, nil", ok, err)
			}
		})
	}
}

func TestWatchMaxHold(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithExpiry(30*time.Second))
	mustAcquire(t, lock)
	watched := lock.Watch(testCtx(t), zerolock.MaxHold(300*time.Millisecond))
	if again := lock.Watch(testCtx(t)); again != watched {
		t.Fatal("a second Watch started another watchdog")
	}
	if cause := waitCause(t, watched); !errors.Is(cause, zerolock.ErrMaxHold) {
		t.Fatalf("cause %v, want ErrMaxHold", cause)
	}
	// The watchdog stopped; the lease is left to its own TTL, still held.
	if resp, err := admin.TimeToLive(testCtx(t), holderLease(t, admin, lock)); err != nil || resp.TTL <= 0 {
		t.Fatalf("lease after MaxHold: %+v, %v; want alive", resp, err)
	}
	mustRelease(t, lock)
}

func TestWatchOfALockNotHeld(t *testing.T) {
	srv := etcdtest.Shared(t)
	lock := etcdlock.New(srv.Client(t), testKey(t))
	watched := lock.Watch(testCtx(t))
	if watched.Err() == nil || !errors.Is(context.Cause(watched), zerolock.ErrLockLost) {
		t.Fatalf("Watch before acquire: cause %v, want ErrLockLost at once", context.Cause(watched))
	}
}

// TestWatchRenewFailedWhileEtcdHangs pauses the server: refreshes cannot
// get through, and the watched context ends with ErrRenewFailed before the
// lease could have expired, on this process's clock.
func TestWatchRenewFailedWhileEtcdHangs(t *testing.T) {
	srv := etcdtest.Shared(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithExpiry(time.Second))
	mustAcquire(t, lock)
	srv.Pause()
	resumed := false
	resume := func() {
		if !resumed {
			srv.Resume()
			resumed = true
		}
	}
	t.Cleanup(resume)
	watched := lock.Watch(testCtx(t))
	cause := waitCause(t, watched)
	resume()
	if !errors.Is(cause, zerolock.ErrRenewFailed) {
		t.Fatalf("cause %v, want ErrRenewFailed", cause)
	}
	// Back up, the server settles the hold: whether the lease expired
	// meanwhile or not, Release answers without error.
	if _, err := lock.ReleaseCtx(testCtx(t)); err != nil {
		t.Fatalf("release after the server came back: %v", err)
	}
	waitServing(t, srv.Client(t))
}

// waitServing polls until etcd answers a read.
func waitServing(t *testing.T, c *clientv3.Client) {
	t.Helper()
	if _, err := c.Get(testCtx(t), "zerolock/etcdtest/ready"); err != nil {
		t.Fatalf("etcd does not answer after resuming: %v", err)
	}
}
