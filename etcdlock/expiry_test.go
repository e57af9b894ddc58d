package etcdlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
)

// TestUnwatchedLockExpires: a lock nobody releases or watches is refused
// to others while its lease lives and taken once etcd has expired the
// lease, which the middleware's window mode relies on.
func TestUnwatchedLockExpires(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	key := testKey(t)
	a := etcdlock.New(srv.Client(t), key, etcdlock.WithExpiry(1500*time.Millisecond))
	b := etcdlock.New(srv.Client(t), key, etcdlock.WithExpiry(10*time.Second))
	mustAcquire(t, a)
	lease := holderLease(t, admin, a)
	if resp, err := admin.TimeToLive(testCtx(t), lease); err != nil || resp.GrantedTTL != 2 {
		t.Fatalf("lease of a 1.5s lock: %+v, %v; want 2s", resp, err)
	}

	refused := 0
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := b.AcquireCtx(testCtx(t))
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		refused++
		if time.Now().After(deadline) {
			t.Fatal("the unwatched lock never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// b got in: etcd must already have expired a's lease, whatever the
	// clocks say.
	if resp, err := admin.TimeToLive(testCtx(t), lease); err != nil || resp.TTL != -1 {
		t.Fatalf("a's lease when b got the lock: %+v, %v; want expired (TTL -1)", resp, err)
	}
	if refused == 0 {
		t.Fatal("b got the lock on its first try, while a's lease lived")
	}
	if ok, err := a.ReleaseCtx(testCtx(t)); ok || err != nil {
		t.Fatalf("release of the expired lock: %v, %v; want false, nil", ok, err)
	}
	if a.Fence() >= b.Fence() {
		t.Fatalf("fences %d then %d, want increasing", a.Fence(), b.Fence())
	}
	mustRelease(t, b)
}

// TestWatchedLockOutlivesItsTTL: Watch keeps a one-second lease alive for
// well over a second, and Release then lets another in at once.
func TestWatchedLockOutlivesItsTTL(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	key := testKey(t)
	a := etcdlock.New(srv.Client(t), key, etcdlock.WithExpiry(time.Second))
	b := etcdlock.New(srv.Client(t), key, etcdlock.WithExpiry(10*time.Second))
	acquired := time.Now()
	mustAcquire(t, a)
	lease := holderLease(t, admin, a)
	// Refreshes far more often than needed, so a slow machine cannot
	// starve the lease: this checks that Watch keeps it, not how fast.
	watched := a.Watch(testCtx(t), zerolock.RenewEvery(200*time.Millisecond))

	for time.Since(acquired) < 2500*time.Millisecond { // 1s TTL, and etcd checks expiries every 500ms
		if ok, err := b.AcquireCtx(testCtx(t)); ok || err != nil {
			t.Fatalf("another got the watched lock after %v: %v, %v", time.Since(acquired), ok, err)
		}
		if err := watched.Err(); err != nil {
			t.Fatalf("watched context ended after %v: %v", time.Since(acquired), context.Cause(watched))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if resp, err := admin.TimeToLive(testCtx(t), lease); err != nil || resp.TTL < 0 {
		t.Fatalf("watched lease after 2.5s: %+v, %v; want alive", resp, err)
	}
	if ttl, err := b.TTL(testCtx(t)); ttl != time.Second || err != nil {
		t.Fatalf("TTL of the watched one-second lease: %v, %v; want 1s", ttl, err)
	}

	mustRelease(t, a)
	if !errors.Is(context.Cause(watched), zerolock.ErrReleased) {
		t.Fatalf("cause after Release: %v, want ErrReleased", context.Cause(watched))
	}
	mustAcquire(t, b)
	mustRelease(t, b)
}
