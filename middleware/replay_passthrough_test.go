package middleware_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/internal/testing/testproc"
	"github.com/zerolock/zerolock/middleware"
)

// A response that cannot be kept, because it is over MaxResponseBytes or
// because the handler streamed it (flushed before returning), still
// reaches its client in full; it is logged, and its retries are refused
// with 409 and Retry-After until Retain passes, when the request runs
// again.
func TestReplayUnkeptResponse(t *testing.T) {
	srv := redistest.Start(t)
	const retain = time.Second
	big := strings.Repeat("0123456789abcdef", 256) // 4 KiB
	var runs atomic.Int32
	c := middleware.LockConf{Mode: middleware.ModeReplay, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/big", Keys: payKeys, MaxResponseBytes: 1024, Retain: retain},
		{Method: http.MethodPost, Path: "/stream", Keys: payKeys, Retain: retain},
	}}
	m := mustMiddleware(t, c, newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/big", Handler: func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			w.Header().Set("X-Kind", "big")
			for i := 0; i < len(big); i += 1000 { // the limit is crossed mid-body
				_, _ = w.Write([]byte(big[i:min(i+1000, len(big))]))
			}
		}},
		{Method: http.MethodPost, Path: "/stream", Handler: func(w http.ResponseWriter, r *http.Request) {
			runs.Add(1)
			w.Header().Set("X-Kind", "stream")
			_, _ = w.Write([]byte("part 1;"))
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("flush through the middleware: %v", err)
			}
			_, _ = w.Write([]byte("part 2"))
		}},
	}, rest.WithJwt(jwtSecret))
	var logs testproc.SyncBuffer
	logx.SetLevel(logx.ErrorLevel)
	logx.SetWriter(logx.NewWriter(&logs))
	t.Cleanup(logx.Disable)

	for _, tc := range []struct{ path, body, why string }{
		{"/big", big, "over MaxResponseBytes"},
		{"/stream", "part 1;part 2", "flushed (streamed)"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			send := func() resttest.Result { return pay(t, base+tc.path, "k-unkept", `{}`) }
			before := runs.Load()
			start := time.Now()
			first := send()
			if first.Status != http.StatusOK || first.Body != tc.body || first.Header.Get("X-Kind") != tc.path[1:] {
				t.Fatalf("first: %d, %d bytes, X-Kind %q; want 200 with the whole body", first.Status, len(first.Body), first.Header.Get("X-Kind"))
			}
			if !strings.Contains(logs.String(), tc.why) {
				t.Fatalf("not logged as %q; log: %s", tc.why, logs.String())
			}
			r := send()
			if r.Status != http.StatusConflict || errorCode(r) != "duplicate_request" || r.Header.Get("Retry-After") != "1" {
				t.Fatalf("retry: %d %s, Retry-After %q; want 409 duplicate_request, 1", r.Status, r.Body, r.Header.Get("Retry-After"))
			}
			deadline := time.Now().Add(5 * time.Second)
			for r.Status == http.StatusConflict {
				if time.Now().After(deadline) {
					t.Fatal("the retries were refused past Retain")
				}
				time.Sleep(50 * time.Millisecond) // waiting for Retain to pass, not for another goroutine
				r = send()
			}
			if elapsed := time.Since(start); elapsed < retain {
				t.Fatalf("a retry ran after %v, before Retain %v passed", elapsed, retain)
			}
			if r.Status != http.StatusOK || r.Body != tc.body || runs.Load()-before != 2 {
				t.Fatalf("retry after Retain: %d, %d bytes, handler ran %d times; want it run again",
					r.Status, len(r.Body), runs.Load()-before)
			}
		})
	}
}
