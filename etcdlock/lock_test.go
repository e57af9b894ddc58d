package etcdlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
)

// The abilities the middleware and interceptor look for beyond Locker.
var _ interface {
	zerolock.Waiter
	Watch(ctx context.Context, opts ...zerolock.WatchOption) context.Context
	Fence() int64
	TTL(ctx context.Context) (time.Duration, error)
} = (*etcdlock.Lock)(nil)

func TestTryLockAndRelease(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	key := testKey(t)
	a := etcdlock.New(srv.Client(t), key, etcdlock.WithExpiry(10*time.Second))
	b := etcdlock.New(srv.Client(t), key, etcdlock.WithExpiry(10*time.Second))
	ctx := testCtx(t)

	if ok, err := a.ReleaseCtx(ctx); ok || err != nil {
		t.Fatalf("release before any acquire: %v, %v; want false, nil", ok, err)
	}
	mustAcquire(t, a)
	leasesBefore := leaseSet(t, admin)
	if ok, err := b.AcquireCtx(ctx); ok || err != nil {
		t.Fatalf("second holder: %v, %v; want false, nil", ok, err)
	}
	if n := queued(t, admin, a); n != 1 {
		t.Fatalf("%d keys under the lock after a failed try, want the holder's only", n)
	}
	for id := range leaseSet(t, admin) {
		if !leasesBefore[id] {
			t.Fatalf("lease %x of the failed try is still there, want it revoked", id)
		}
	}
	ttl, err := b.TTL(ctx)
	if err != nil || ttl <= 0 || ttl > 10*time.Second {
		t.Fatalf("TTL seen by the refused: %v, %v; want (0, 10s]", ttl, err)
	}
	if ok, err := b.ReleaseCtx(ctx); ok || err != nil {
		t.Fatalf("release by the refused: %v, %v; want false, nil", ok, err)
	}
	if n := queued(t, admin, a); n != 1 {
		t.Fatal("the refused one's release deleted the holder's key")
	}

	mustRelease(t, a)
	if ok, err := a.ReleaseCtx(ctx); ok || err != nil {
		t.Fatalf("second release: %v, %v; want false, nil", ok, err)
	}
	if ttl, err := b.TTL(ctx); ttl != 0 || err != nil {
		t.Fatalf("TTL of a free lock: %v, %v; want 0, nil", ttl, err)
	}
	mustAcquire(t, b) // at once: the release freed it
	mustRelease(t, b)
}

// leaseSet returns the IDs of the leases etcd has.
func leaseSet(t *testing.T, admin *clientv3.Client) map[clientv3.LeaseID]bool {
	t.Helper()
	resp, err := admin.Leases(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	set := make(map[clientv3.LeaseID]bool, len(resp.Leases))
	for _, l := range resp.Leases {
		set[l.ID] = true
	}
	return set
}

func TestAcquireAgainRefreshesTheHold(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	a := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithExpiry(10*time.Second))
	mustAcquire(t, a)
	fence, lease := a.Fence(), holderLease(t, admin, a)
	mustAcquire(t, a)
	if a.Fence() != fence || holderLease(t, admin, a) != lease || queued(t, admin, a) != 1 {
		t.Fatalf("re-acquire made a new hold (fence %d -> %d), want the same one refreshed", fence, a.Fence())
	}
	// A hold whose key was deleted under it is replaced by a fresh one.
	if _, err := admin.Delete(testCtx(t), string(holderKey(t, admin, a).Kvs[0].Key)); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, a)
	if a.Fence() <= fence {
		t.Fatalf("fence after re-acquiring a lost hold: %d, want > %d", a.Fence(), fence)
	}
	mustRelease(t, a)
}

func TestInvalidExpiry(t *testing.T) {
	srv := etcdtest.Shared(t)
	lock := etcdlock.New(srv.Client(t), testKey(t), etcdlock.WithExpiry(-time.Second))
	if _, err := lock.AcquireCtx(testCtx(t)); !errors.Is(err, etcdlock.ErrInvalidExpiry) {
		t.Fatalf("AcquireCtx: %v, want ErrInvalidExpiry", err)
	}
	if _, err := lock.AcquireWaitCtx(testCtx(t), time.Second); !errors.Is(err, etcdlock.ErrInvalidExpiry) {
		t.Fatalf("AcquireWaitCtx: %v, want ErrInvalidExpiry", err)
	}
}

func TestLeaseTTLIsExpiryRoundedUp(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin, client := srv.Client(t), srv.Client(t)
	for _, tc := range []struct {
		expiry time.Duration
		ttl    int64
	}{
		{0, 1},
		{time.Nanosecond, 1},
		{time.Second, 1},
		{1001 * time.Millisecond, 2},
		{5 * time.Second, 5},
	} {
		t.Run(tc.expiry.String(), func(t *testing.T) {
			lock := etcdlock.New(client, testKey(t), etcdlock.WithExpiry(tc.expiry))
			mustAcquire(t, lock)
			resp, err := admin.TimeToLive(testCtx(t), holderLease(t, admin, lock))
			if err != nil {
				t.Fatal(err)
			}
			if resp.GrantedTTL != tc.ttl {
				t.Fatalf("lease TTL %ds, want %ds", resp.GrantedTTL, tc.ttl)
			}
			mustRelease(t, lock)
		})
	}
}

func TestPrefix(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	lock := etcdlock.New(srv.Client(t), "order:1", etcdlock.WithPrefix("/zerolock/"+testKey(t)+"/"))
	if want := "/zerolock/" + testKey(t) + "/order:1"; lock.Key() != want {
		t.Fatalf("Key() = %q, want %q", lock.Key(), want)
	}
	mustAcquire(t, lock)
	if n := queued(t, admin, lock); n != 1 {
		t.Fatalf("%d keys under the prefixed lock, want 1", n)
	}
	mustRelease(t, lock)
}

// An unreachable etcd makes every call return a wrapped error in time,
// never a panic.
func TestUnreachableEtcd(t *testing.T) {
	client, err := clientv3.New(clientv3.Config{
		Endpoints: []string{"http://127.0.0.1:1"}, DialTimeout: time.Second, Logger: zap.NewNop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	lock := etcdlock.New(client, testKey(t))

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if ok, err := lock.AcquireCtx(ctx); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireCtx: %v, %v; want false and a deadline error", ok, err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if ok, err := lock.AcquireWaitCtx(ctx, 0); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireWaitCtx: %v, %v; want false and a deadline error", ok, err)
	}
	if _, err := lock.TTL(ctx); err == nil {
		t.Fatal("TTL answered without etcd")
	}
	if ok, err := lock.ReleaseCtx(context.Background()); ok || err != nil {
		t.Fatalf("release of a lock never held: %v, %v; want false, nil", ok, err)
	}
}
