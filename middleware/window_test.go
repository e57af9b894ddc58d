package middleware_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// leaveFirstRequest serves POST /pay under a window-mode rule on
// header:X-User, sends a first request, and disconnects its client while
// the handler runs; the handler then calls afterLeft, as a handler whose
// work outlived the client would. It returns once the middleware has
// finished with that request (its lock kept or released), with the base
// URL and the count of handler runs. Later requests are answered 200.
func leaveFirstRequest(t *testing.T, afterLeft http.HandlerFunc) (string, *atomic.Int32) {
	t.Helper()
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Expire: time.Minute, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/pay", Keys: []string{"header:X-User"}},
	}}, newStore(srv))
	calls := new(atomic.Int32)
	inside, served := make(chan struct{}), make(chan struct{}, 1)
	base := resttest.Serve(t, func(s *rest.Server) {
		s.Use(func(next http.HandlerFunc) http.HandlerFunc { // outside the lock: its release is done
			return func(w http.ResponseWriter, r *http.Request) {
				next(w, r)
				served <- struct{}{}
			}
		})
		s.Use(m.Handle)
	}, []rest.Route{{Method: http.MethodPost, Path: "/pay", Handler: func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			close(inside)
			<-r.Context().Done() // the client left
			afterLeft(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}}})

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/pay", nil)
	req.Header.Set("X-User", "u")
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-inside
	cancel()
	<-served
	return base, calls
}

// A client that disconnects while the handler runs does not free the
// window: the handler completed, the operation happened, and the retry is
// exactly the repeat window mode exists to refuse.
func TestWindowKeptWhenClientLeaves(t *testing.T) {
	base, calls := leaveFirstRequest(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK) // the work completes anyway
	})
	if r := resttest.Do(t, http.MethodPost, base+"/pay", "", "X-User", "u"); r.Status != http.StatusConflict {
		t.Fatalf("retry after the client left a completed request: %d, want 409 (the window holds)", r.Status)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}

// The body key reads a JSON body as the handler parses it: other
// whitespace, member order, number spelling or a trailing newline is the
// same request. Other content types are hashed byte for byte.
func TestBodyKeyCanonicalJSON(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Expire: time.Minute, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/raw", Keys: []string{"body"}},
	}}, newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/raw", Handler: func(http.ResponseWriter, *http.Request) {}},
	})
	send := func(contentType, body string) int {
		req, _ := http.NewRequest(http.MethodPost, base+"/raw", strings.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		return resttest.Send(t, req).Status
	}
	const js = "application/json"
	for i, tc := range []struct {
		contentType, body string
		want              int
	}{
		{js, `{"order":{"id":"o-1","amount":5},"items":[1,2]}`, 200},
		{js, "{ \"items\": [1, 2.0],\n  \"order\": {\"amount\": 5e0, \"id\": \"o-1\"} }\n", 409},
		{js + "; charset=utf-8", `{"items":[1,2],"order":{"id":"o-1","amount":5}}`, 409},
		{js, `{"order":{"id":"o-1","amount":6},"items":[1,2]}`, 200},
		{js, `{"order":`, 400},
		{"text/plain", "ticket 7", 200},
		{"text/plain", "ticket 7\n", 200}, // bytes: a different body
		{"text/plain", "ticket 7", 409},
	} {
		if got := send(tc.contentType, tc.body); got != tc.want {
			t.Fatalf("request %d (%s %q): %d, want %d", i, tc.contentType, tc.body, got, tc.want)
		}
	}
}

// A client that disconnects while its handler runs, and a handler that then
// fails because of it (its database call was cancelled) and answers an
// error: nothing happened, so the window is freed and the retry runs.
func TestWindowFreedWhenCancelledHandlerFails(t *testing.T) {
	base, _ := leaveFirstRequest(t, func(w http.ResponseWriter, r *http.Request) {
		httpx.ErrorCtx(r.Context(), w, r.Context().Err()) // go-zero's default: 400
	})
	if r := resttest.Do(t, http.MethodPost, base+"/pay", "", "X-User", "u"); r.Status != http.StatusOK {
		t.Fatalf("retry after a cancelled request that failed: %d, want 200 (the window is freed)", r.Status)
	}
}
