package embedredis

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

func TestMain(m *testing.M) {
	redistest.Quiet()
	goleak.VerifyTestMain(m, redistest.LeakOptions()...)
}

// TestEmbeddedKeysExpireInRealTime: a key set with PX on the embedded
// miniredis reports a shrinking PTTL and is gone once its time has passed,
// as on a redis-server, with nobody moving the clock by hand; Close stops
// the clock's goroutine (TestMain's goleak check).
func TestEmbeddedKeysExpireInRealTime(t *testing.T) {
	srv, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()

	const px = 300 * time.Millisecond
	start := time.Now()
	if err := client.Set(ctx, "k", "v", px).Err(); err != nil {
		t.Fatal(err)
	}
	first := client.PTTL(ctx, "k").Val()
	if first <= 0 || first > px {
		t.Fatalf("PTTL right after SET PX 300: %v", first)
	}
	shrank := false
	deadline := start.Add(5 * time.Second)
	for client.Exists(ctx, "k").Val() == 1 {
		if time.Now().After(deadline) {
			t.Fatalf("key still there %v after SET PX %v", time.Since(start), px)
		}
		if ttl := client.PTTL(ctx, "k").Val(); ttl > 0 && ttl < first {
			shrank = true
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A key set between two ticks is aged by the whole interval at the
	// next one: it may go up to a tick early.
	if gone := time.Since(start); gone < px-clockTick {
		t.Fatalf("key gone after %v, more than a tick before its %v", gone, px)
	}
	if !shrank {
		t.Fatal("PTTL never went down while the key lived")
	}
}
