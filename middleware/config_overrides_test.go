package middleware_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// TestRejectCodeRetryAfterAndOverrides: LockConf.RejectCode replaces the
// 409 of a refusal, and a rule's own Mode and Expire override the
// configuration's, its Retry-After counting down the rule's window.
func TestRejectCodeRetryAfterAndOverrides(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{
		RejectCode: http.StatusTooManyRequests,
		Rules: []middleware.LockRule{
			// inflight by default; this rule overrides with a 10s window.
			{Method: http.MethodPost, Path: "/w", Keys: []string{"header:X-User"}, Mode: middleware.ModeWindow, Expire: 10 * time.Second},
		},
	}, newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/w", Handler: func(w http.ResponseWriter, r *http.Request) {}},
	})
	if r := resttest.Do(t, http.MethodPost, base+"/w", "", "X-User", "u"); r.Status != http.StatusOK {
		t.Fatalf("first: %d", r.Status)
	}
	r := resttest.Do(t, http.MethodPost, base+"/w", "", "X-User", "u")
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("sequential repeat under the rule's window: %d, want the configured 429", r.Status)
	}
	if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 9 || secs > 10 {
		t.Fatalf("Retry-After %q, want the remaining 9-10 s of the 10 s window", r.Header.Get("Retry-After"))
	}
}
