package etcdlock_test

import (
	"testing"
	"time"

	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
)

// TestFenceIncreases: successive holders, on one Lock or several, get
// strictly increasing fencing tokens, each the create revision of the
// holder's key.
func TestFenceIncreases(t *testing.T) {
	srv := etcdtest.Shared(t)
	admin := srv.Client(t)
	key := testKey(t)
	locks := []*etcdlock.Lock{
		etcdlock.New(srv.Client(t), key, etcdlock.WithExpiry(10*time.Second)),
		etcdlock.New(srv.Client(t), key, etcdlock.WithExpiry(10*time.Second)),
	}
	if f := locks[0].Fence(); f != 0 {
		t.Fatalf("fence before any acquire: %d, want 0", f)
	}
	var last int64
	for i := 0; i < 10; i++ {
		lock := locks[i%3%2] // 0, 1, 0, 0, 1, 0, ...: the same Lock twice in a row too
		mustAcquire(t, lock)
		fence := lock.Fence()
		if rev := holderKey(t, admin, lock).Kvs[0].CreateRevision; fence != rev {
			t.Fatalf("fence %d, want the key's create revision %d", fence, rev)
		}
		if fence <= last {
			t.Fatalf("holder %d got fence %d after %d, want strictly increasing", i, fence, last)
		}
		last = fence
		mustRelease(t, lock)
	}
}
