package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
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
	xhttp "github.com/zerolock/zerolock/internal/testing/zeromicrox/http"
	"github.com/zerolock/zerolock/middleware"
)

// businessCode is a service's numeric code for each reason of the
// middleware's answers, as a service with the {code, msg} convention of
// go-zero's x/http numbers its errors.
func businessCode(e *middleware.Error) int {
	switch {
	case errors.Is(e, middleware.ErrDuplicateRequest):
		return 10409
	case errors.Is(e, middleware.ErrMissingField):
		return 10400
	default:
		return 10000
	}
}

// TestRefusalHandlerGivesTheServiceConvention: a refusal handler answers
// the middleware's refusals in the service's own convention (HTTP 200 and
// {code, msg} with a numeric business code, as go-zero's x/http does),
// while the docs' error handler is installed; it receives the *Error, whose
// errors.Is tells the reason, and Retry-After is still set. Set to nil, the
// default answer is back.
func TestRefusalHandlerGivesTheServiceConvention(t *testing.T) {
	installDocsErrorHandler(t)
	srv := redistest.Start(t)
	m := mustMiddleware(t, resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "header:X-User-Id", "json:orderId"), newStore(srv))
	m.SetRefusalHandler(func(ctx context.Context, e *middleware.Error) (int, any) {
		return http.StatusOK, xhttp.BaseResponse[struct{}]{Code: businessCode(e), Msg: e.Message}
	})
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}})
	send := func(body string) resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/orders", body, "X-User-Id", "alice")
	}
	first := make(chan resttest.Result, 1)
	go func() { first <- send(`{"orderId":"H-1"}`) }()
	<-g.Inside

	for _, tc := range []struct {
		name, body string
		want       xhttp.BaseResponse[struct{}]
	}{
		{"duplicate", `{"orderId":"H-1"}`, xhttp.BaseResponse[struct{}]{Code: 10409, Msg: "the same request is already being handled, retry later"}},
		{"missing key", `{}`, xhttp.BaseResponse[struct{}]{Code: 10400, Msg: "missing required field json:orderId"}},
	} {
		r := send(tc.body)
		var got xhttp.BaseResponse[struct{}]
		if err := json.Unmarshal([]byte(r.Body), &got); err != nil || r.Status != http.StatusOK || got != tc.want {
			t.Fatalf("%s: %d %s, want 200 %+v", tc.name, r.Status, r.Body, tc.want)
		}
		if tc.name == "duplicate" && r.Header.Get("Retry-After") == "" {
			t.Fatal("the refused duplicate has no Retry-After")
		}
	}
	m.SetRefusalHandler(nil) // the default answer again
	wantRefusal(t, send(`{"orderId":"H-1"}`), http.StatusConflict, "duplicate_request")
	close(g.Release)
	if r := <-first; r.Status != http.StatusOK {
		t.Fatalf("the admitted request: %d %s", r.Status, r.Body)
	}
}

// TestRefusalHandlerCannotAnswer5xx: a refusal handler's 5xx for a refusal
// (or a status that is no HTTP status) becomes the refusal's own status,
// with the handler's body; a body that cannot be marshalled becomes the
// default one; both are logged once. The 503 of a store that is down is a
// 5xx already, and the handler may keep it. A nil body writes the status
// alone, an error body its text.
func TestRefusalHandlerCannotAnswer5xx(t *testing.T) {
	srv := redistest.Start(t)
	down := redistest.Start(t)
	downStore := newStore(down)
	down.Kill()
	type answer struct {
		status int
		body   any
		mutate bool // the hook sets e.Status to 500 and answers it
		panics bool
	}
	var next atomic.Pointer[answer] // set before each request, read by the handler
	hook := func(ctx context.Context, e *middleware.Error) (int, any) {
		a := next.Load()
		switch {
		case a.panics:
			panic("a bug in the refusal handler")
		case a.mutate:
			e.Status = http.StatusInternalServerError
			return e.Status, nil
		}
		return a.status, a.body
	}
	up := mustMiddleware(t, resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "header:X-User-Id", "json:orderId"), newStore(srv))
	up.SetRefusalHandler(hook)
	broken := mustMiddleware(t, resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "header:X-User-Id", "json:orderId"), downStore)
	broken.SetRefusalHandler(hook)
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(up.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}})
	brokenBase := resttest.Serve(t, func(s *rest.Server) { s.Use(broken.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}})
	var logs testproc.SyncBuffer
	logx.SetLevel(logx.ErrorLevel)
	logx.SetWriter(logx.NewWriter(&logs))
	t.Cleanup(logx.Disable)
	send := func(base string) resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"F-1"}`, "X-User-Id", "alice")
	}
	first := make(chan resttest.Result, 1)
	go func() { first <- send(base) }()
	<-g.Inside

	for _, tc := range []struct {
		name       string
		base       string
		answer     answer
		wantStatus int
		wantBody   string
	}{
		{"500 for a duplicate", base, answer{status: http.StatusInternalServerError, body: map[string]int{"code": 1}}, http.StatusConflict, `{"code":1}`},
		{"503 for a duplicate", base, answer{status: http.StatusServiceUnavailable, body: nil}, http.StatusConflict, ""},
		{"no status", base, answer{status: 0, body: map[string]int{"code": 2}}, http.StatusConflict, `{"code":2}`},
		{"unmarshallable body", base, answer{status: http.StatusOK, body: map[string]any{"f": func() {}}}, http.StatusOK,
			`{"code":"duplicate_request","message":"the same request is already being handled, retry later"}`},
		{"nil body", base, answer{status: http.StatusTooManyRequests}, http.StatusTooManyRequests, ""},
		{"a 500 written into the *Error", base, answer{mutate: true}, http.StatusConflict, ""},
		{"a panic", base, answer{panics: true}, http.StatusConflict,
			`{"code":"duplicate_request","message":"the same request is already being handled, retry later"}`},
		{"error body", base, answer{status: http.StatusConflict, body: errors.New("busy")}, http.StatusConflict, "busy\n"},
		{"503 of a store that is down", brokenBase, answer{status: http.StatusServiceUnavailable, body: map[string]int{"code": 3}},
			http.StatusServiceUnavailable, `{"code":3}`},
		{"200 of a store that is down", brokenBase, answer{status: http.StatusOK, body: map[string]int{"code": 4}},
			http.StatusOK, `{"code":4}`},
	} {
		next.Store(&tc.answer)
		if r := send(tc.base); r.Status != tc.wantStatus || r.Body != tc.wantBody {
			t.Errorf("%s: %d %q, want %d %q", tc.name, r.Status, r.Body, tc.wantStatus, tc.wantBody)
		}
	}
	close(g.Release)
	<-first
	if n := strings.Count(logs.String(), "the refusal handler"); n != 1 {
		t.Errorf("the refusal handler's mistakes were logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "must not become a 5xx") {
		t.Errorf("the log does not say why the status was replaced:\n%s", logs.String())
	}
}
