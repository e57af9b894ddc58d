package middleware_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

func formPost(t *testing.T, url, body string) resttest.Result {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return resttest.Send(t, req)
}

// TestFormAndQueryAliases: go-zero's form tag reads the body's values
// before the query's and folds name[] into name. A key that read only one
// of them would let repeats through under new keys, so any second value
// is refused.
func TestFormAndQueryAliases(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/q", Keys: []string{"query:shop", "ip"}},
	}}, newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/q", Handler: func(w http.ResponseWriter, r *http.Request) {}},
	})
	for _, tc := range []struct {
		name, query, body string
		want              int
	}{
		{"query and body", "?shop=R1", "shop=A", http.StatusBadRequest},
		{"name and name[]", "", "shop=R&shop[]=A", http.StatusBadRequest},
		{"name[] alone", "", "shop[]=B", http.StatusOK},
		{"name[] alone again", "?shop[]=B", "", http.StatusConflict}, // same value B, same key
		{"empty values are ignored", "?shop=&shop=C", "", http.StatusOK},
	} {
		if r := formPost(t, base+"/q"+tc.query, tc.body); r.Status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, r.Status, r.Body, tc.want)
		}
	}
}

// TestParamRuleSkipsStaticRoute: a rule for /orders/:id does not catch the
// separate static route /orders/batch that the router chose.
func TestParamRuleSkipsStaticRoute(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/orders/:id", Keys: []string{"path:id", "header:X-User"}},
	}}, newStore(srv))
	var batch atomic.Int32
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/orders/:id", Handler: func(w http.ResponseWriter, r *http.Request) {}},
		{Method: http.MethodPost, Path: "/orders/batch", Handler: func(w http.ResponseWriter, r *http.Request) { batch.Add(1) }},
	})
	for i := 0; i < 2; i++ {
		if r := resttest.Do(t, http.MethodPost, base+"/orders/batch", ""); r.Status != http.StatusOK {
			t.Fatalf("static route under a :id rule: %d %s, want 200 untouched", r.Status, r.Body)
		}
	}
	if batch.Load() != 2 {
		t.Fatalf("static route reached %d times, want 2", batch.Load())
	}
	if r := resttest.Do(t, http.MethodPost, base+"/orders/7", "", "X-User", "u"); r.Status != http.StatusOK {
		t.Fatalf("param route: %d", r.Status)
	}
	if r := resttest.Do(t, http.MethodPost, base+"/orders/7", "", "X-User", "u"); r.Status != http.StatusConflict {
		t.Fatalf("param route repeat: %d, want 409", r.Status)
	}
}

func TestJSONKeyNeedsJSONBody(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, resttest.OrdersConf(middleware.ModeInflight, time.Second, "claim:userId", "json:orderId"), newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/orders", Handler: func(w http.ResponseWriter, r *http.Request) {}},
	}, rest.WithJwt(jwtSecret))
	req, _ := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(`{"orderId":"A"}`))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+resttest.Token(t, jwtSecret, 1))
	if r := resttest.Send(t, req); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "application/json") {
		t.Fatalf("JSON key on a text/plain body: %d %s, want 400 saying the body is not JSON", r.Status, r.Body)
	}
}

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

func TestBodyMultipartAndIPKeys(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/raw", Keys: []string{"body"}},
		{Method: http.MethodPost, Path: "/upload", Keys: []string{"form:ticket"}},
		{Method: http.MethodPost, Path: "/ip", Keys: []string{"ip"}},
	}}, newStore(srv))
	ok := func(w http.ResponseWriter, r *http.Request) {}
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/raw", Handler: ok},
		{Method: http.MethodPost, Path: "/upload", Handler: ok},
		{Method: http.MethodPost, Path: "/ip", Handler: ok},
	})
	for i, tc := range []struct {
		body string
		want int
	}{{"a", 200}, {"a", 409}, {"b", 200}} {
		req, _ := http.NewRequest(http.MethodPost, base+"/raw", strings.NewReader(tc.body))
		if r := resttest.Send(t, req); r.Status != tc.want {
			t.Fatalf("body key request %d: %d, want %d", i, r.Status, tc.want)
		}
	}
	multipartPost := func(ticket string) int {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("ticket", ticket)
		fw, _ := mw.CreateFormFile("file", "a.txt")
		_, _ = fw.Write([]byte("file content"))
		_ = mw.Close()
		req, _ := http.NewRequest(http.MethodPost, base+"/upload", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return resttest.Send(t, req).Status
	}
	if a, b, c := multipartPost("T1"), multipartPost("T1"), multipartPost("T2"); a != 200 || b != 409 || c != 200 {
		t.Fatalf("multipart form key: %d %d %d, want 200 409 200", a, b, c)
	}
	// ip trusts X-Forwarded-For, as go-zero's httpx.GetRemoteAddr does.
	if a, b, c := resttest.Do(t, http.MethodPost, base+"/ip", "", "X-Forwarded-For", "10.0.0.1").Status,
		resttest.Do(t, http.MethodPost, base+"/ip", "", "X-Forwarded-For", "10.0.0.1").Status,
		resttest.Do(t, http.MethodPost, base+"/ip", "", "X-Forwarded-For", "10.0.0.2").Status; a != 200 || b != 409 || c != 200 {
		t.Fatalf("ip key: %d %d %d, want 200 409 200", a, b, c)
	}
}
