package etcdlock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
)

func TestMain(m *testing.M) {
	etcdtest.Main(m)
}

// testKey is a lock key of the test's own.
func testKey(t *testing.T) string {
	t.Helper()
	return "zerolock:test:" + strings.ReplaceAll(t.Name(), "/", ":")
}

// testCtx bounds a test's calls to etcd, generously.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// queued returns how many holders and waiters have a key under the lock.
func queued(t *testing.T, admin *clientv3.Client, lock *etcdlock.Lock) int64 {
	t.Helper()
	resp, err := admin.Get(testCtx(t), lock.Key()+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// waitQueued polls until n holders and waiters have a key under the lock.
func waitQueued(t *testing.T, admin *clientv3.Client, lock *etcdlock.Lock, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if queued(t, admin, lock) == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%d keys under %s, want %d", queued(t, admin, lock), lock.Key(), n)
}

// holderKey returns the key of the lock's current holder, read from etcd.
func holderKey(t *testing.T, admin *clientv3.Client, lock *etcdlock.Lock) *clientv3.GetResponse {
	t.Helper()
	resp, err := admin.Get(testCtx(t), lock.Key()+"/", clientv3.WithFirstCreate()...)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		t.Fatalf("nobody holds %s", lock.Key())
	}
	return resp
}

// holderLease returns the lease of the lock's current holder.
func holderLease(t *testing.T, admin *clientv3.Client, lock *etcdlock.Lock) clientv3.LeaseID {
	t.Helper()
	return clientv3.LeaseID(holderKey(t, admin, lock).Kvs[0].Lease)
}

// mustAcquire takes lock once and fails the test unless it got it.
func mustAcquire(t *testing.T, lock *etcdlock.Lock) {
	t.Helper()
	if ok, err := lock.AcquireCtx(testCtx(t)); err != nil || !ok {
		t.Fatalf("acquire %s: %v, %v; want true, nil", lock.Key(), ok, err)
	}
}

// mustRelease releases lock and fails the test unless it held it.
func mustRelease(t *testing.T, lock *etcdlock.Lock) {
	t.Helper()
	if ok, err := lock.ReleaseCtx(testCtx(t)); err != nil || !ok {
		t.Fatalf("release %s: %v, %v; want true, nil", lock.Key(), ok, err)
	}
}
