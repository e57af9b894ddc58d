package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// TestReleaseOnHungServerIsBounded: when Redis stops answering while the
// handler runs, the release after it gives up after the rule's expiry (by
// then the key has expired anyway), not after the client's 3 s read
// timeout, so the request is not held longer than the lock could matter.
// go-zero's store needs redislock.WithDeadlineGuard for that.
func TestReleaseOnHungServerIsBounded(t *testing.T) {
	srv := redistest.Start(t)
	const expire = 300 * time.Millisecond
	conf := middleware.LockConf{Expire: expire, Mode: middleware.ModeInflight, Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/pay", Keys: []string{"json:orderId"},
	}}}
	backend := redislock.NewBackend(redislock.GoZeroStore(newStore(srv)), redislock.WithDeadlineGuard())
	m, err := middleware.NewLockMiddlewareWithBackend(conf, backend)
	if err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	h := m.Handle(func(w http.ResponseWriter, r *http.Request) {
		srv.Pause() // Redis hangs before the release
		w.WriteHeader(http.StatusOK)
	})
	req := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader(`{"orderId":"H-1"}`))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	start := time.Now()
	h(rec, req)
	took := time.Since(start)
	srv.Resume()
	resumed = true
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if took > expire+time.Second {
		t.Fatalf("the request took %v with a hung release; the lock expires after %v", took, expire)
	}
}
