package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// BenchmarkInflightHandle runs requests through the middleware's Handle in
// process (no HTTP server), each on a key of its own, in inflight mode on
// a go-redis client: the middleware's own cost plus an acquire and a
// release, per request. Its allocs/op is the figure to compare across
// changes of the request flow (54 before guard.Serve, 55 after: the
// Exchange; 61 with renewal on by default, 55 with DisableRenew: the
// handler's cancellable context, the renewal and its timer); its ns/op is
// mostly the two round trips. The sub-benchmarks are the default (renewal
// on: a timer per request, stopped at return) and renewal off.
func BenchmarkInflightHandle(b *testing.B) {
	srv := redistest.Start(b)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64})
	b.Cleanup(func() { _ = rdb.Close() })
	b.Run("default", func(b *testing.B) { benchInflight(b, rdb, false) })
	b.Run("DisableRenew", func(b *testing.B) { benchInflight(b, rdb, true) })
}

func benchInflight(b *testing.B, rdb *redis.Client, disableRenew bool) {
	m, err := middleware.NewLockMiddlewareWithBackend(middleware.LockConf{DisableRenew: disableRenew, Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/orders", Keys: []string{"header:X-User"},
	}}}, redislock.NewBackend(rdb, redislock.WithoutWakeups()))
	if err != nil {
		b.Fatal(err)
	}
	h := m.Handle(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := httptest.NewRequest(http.MethodPost, "/orders", nil)
			r.Header.Set("X-User", strconv.FormatInt(n.Add(1), 10))
			w := httptest.NewRecorder()
			h(w, r)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d", w.Code)
			}
		}
	})
}
