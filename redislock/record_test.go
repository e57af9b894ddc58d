package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// The replay primitives on every store a user can hand the lock, single
// node and Cluster: a record takes the hold's place only while the hold is
// this lock's, is read instead of acquired afterwards, expires after its
// retention, and a holder that lost its lock stores nothing.
func TestRecord(t *testing.T) {
	srv := redistest.Start(t)
	all := append(backends(t, srv), clusterBackends(t, redistest.SharedCluster(t))...)
	for i, b := range all {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			key := fmt.Sprintf("zerolock-test:record:%d:{slot%d}", i, i)
			a := redislock.Recording(b.newLock(key, redislock.WithExpiry(5*time.Second)))
			other := redislock.Recording(b.newLock(key, redislock.WithExpiry(5*time.Second)))

			if ok, rec, err := a.AcquireOrReadCtx(ctx); !ok || rec != nil || err != nil {
				t.Fatalf("AcquireOrReadCtx on a free key = %v, %q, %v; want true", ok, rec, err)
			}
			if ok, rec, err := other.AcquireOrReadCtx(ctx); ok || rec != nil || err != nil {
				t.Fatalf("AcquireOrReadCtx on a held key = %v, %q, %v; want false, no record", ok, rec, err)
			}
			if ok, err := other.RecordCtx(ctx, []byte("forged"), time.Minute); ok || err != nil {
				t.Fatalf("RecordCtx by a non-holder = %v, %v; want false", ok, err)
			}
			result := []byte("\x00binary result\xff")
			if ok, err := a.RecordCtx(ctx, result, 400*time.Millisecond); !ok || err != nil {
				t.Fatalf("RecordCtx by the holder = %v, %v; want true", ok, err)
			}
			if ok, err := a.RecordCtx(ctx, result, 400*time.Millisecond); !ok || err != nil {
				t.Fatalf("RecordCtx resent after it stored = %v, %v; want true (the record is there)", ok, err)
			}
			for _, l := range []redislock.RecordingLock{other, a} {
				ok, rec, err := l.AcquireOrReadCtx(ctx)
				if ok || err != nil || string(rec) != string(result) {
					t.Fatalf("AcquireOrReadCtx on a record = %v, %q, %v; want the record", ok, rec, err)
				}
			}
			if ok, _ := a.ReleaseCtx(ctx); ok {
				t.Fatal("ReleaseCtx deleted a record: it holds no token")
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				ok, rec, err := other.AcquireOrReadCtx(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					break // the record expired after its retention
				}
				if rec == nil || time.Now().After(deadline) {
					t.Fatalf("record neither kept nor expired: %v, %q", ok, rec)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if ok, _ := other.ReleaseCtx(ctx); !ok {
				t.Fatal("release after the record expired")
			}
		})
	}
}

// RecordCtx ends a running Watch first, with ErrReleased: the watchdog's
// compare-and-pexpire would otherwise find the record and report the lock
// lost.
func TestRecordStopsWatch(t *testing.T) {
	srv := redistest.Start(t)
	lock := redislock.Recording(redislock.New(srv.Client(t), "zerolock-test:record:watch", redislock.WithExpiry(time.Second)))
	ctx := context.Background()
	if ok, _, err := lock.AcquireOrReadCtx(ctx); !ok || err != nil {
		t.Fatalf("acquire: %v, %v", ok, err)
	}
	watched := lock.Watch(ctx)
	if ok, err := lock.RecordCtx(ctx, []byte("r"), time.Minute); !ok || err != nil {
		t.Fatalf("RecordCtx = %v, %v", ok, err)
	}
	if cause := context.Cause(watched); !errors.Is(cause, zerolock.ErrReleased) {
		t.Fatalf("Watch ended with %v, want ErrReleased", cause)
	}
	if _, err := lock.RecordCtx(ctx, []byte("r"), 0); !errors.Is(err, redislock.ErrInvalidRetain) {
		t.Fatalf("RecordCtx with no retention = %v, want ErrInvalidRetain", err)
	}
}

// WithReplicaAcks holds in replay mode too: with no replica to acknowledge,
// AcquireOrReadCtx fails with ErrNotReplicated and leaves no key (it ignored
// the option before). RecordCtx sends its WAIT through the same helper.
func TestRecordReplicaAcksMissing(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	const key = "zerolock-test:record:acks"
	acked := redislock.Recording(redislock.New(client, key, redislock.WithReplicaAcks(1, 100*time.Millisecond)))
	ok, rec, err := acked.AcquireOrReadCtx(ctx)
	if ok || rec != nil || !errors.Is(err, redislock.ErrNotReplicated) {
		t.Fatalf("AcquireOrReadCtx with no replica = %v, %q, %v; want ErrNotReplicated", ok, rec, err)
	}
	if client.Exists(ctx, key).Val() != 0 {
		t.Fatal("an unacknowledged acquisition left its key")
	}
}
