package middleware_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// TestWindowReleasedAfterServerTimeout: go-zero's timeout answers 503 while
// the handler still runs; the user's retry must not then be refused.
func TestWindowReleasedAfterServerTimeout(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Expire: time.Minute, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/slow", Keys: []string{"header:X-User"}},
	}}, newStore(srv))
	var calls atomic.Int32
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/slow", Handler: func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				<-r.Context().Done() // outlives go-zero's timeout
			}
		}},
	}, rest.WithTimeout(100*time.Millisecond))
	if r := resttest.Do(t, http.MethodPost, base+"/slow", "", "X-User", "u"); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("timed-out request: %d, want go-zero's 503", r.Status)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := resttest.Do(t, http.MethodPost, base+"/slow", "", "X-User", "u")
		if r.Status == http.StatusOK {
			break
		}
		if r.Status != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("retry after a timeout: %d, want 200 once the handler returned", r.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
