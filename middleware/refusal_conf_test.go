package middleware_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// messagesYAML is a Lock section with a Message for every rule and a rule
// with its own RejectCode and Message.
const messagesYAML = `
Lock:
  Mode: window
  Expire: 5s
  Message: 请勿重复提交
  Rules:
    - Method: POST
      Path: /orders
      Keys: [header:X-User-Id, json:orderId]
    - Method: POST
      Path: /transfers
      Keys: [header:X-User-Id, json:orderId]
      RejectCode: 425
      Message: the transfer is still running
    - Method: GET
      Path: /exports
      Keys: [header:X-User-Id]
      Mode: limit
      Permits: 1
`

// TestMessageAndRejectCodePerRule: the conf's Message is the message of a
// refused duplicate and of limit mode's 429, a rule's Message and
// RejectCode win over the conf's, and the 400 of a missing key keeps its
// own message, naming the key.
func TestMessageAndRejectCodePerRule(t *testing.T) {
	var c struct{ Lock middleware.LockConf }
	if err := conf.LoadFromYamlBytes([]byte(messagesYAML), &c); err != nil {
		t.Fatal(err)
	}
	srv := redistest.Start(t)
	m := mustMiddleware(t, c.Lock, newStore(srv))
	e := newExports("alice")
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/orders", Handler: func(w http.ResponseWriter, r *http.Request) {}},
		{Method: http.MethodPost, Path: "/transfers", Handler: func(w http.ResponseWriter, r *http.Request) {}},
		{Method: http.MethodGet, Path: "/exports", Handler: e.handle},
	})
	post := func(path, body string) resttest.Result {
		return resttest.Do(t, http.MethodPost, base+path, body, "X-User-Id", "alice")
	}
	for _, path := range []string{"/orders", "/transfers"} {
		if r := post(path, `{"orderId":"M-1"}`); r.Status != http.StatusOK {
			t.Fatalf("the first POST %s: %d %s", path, r.Status, r.Body)
		}
	}
	if body := wantRefusal(t, post("/orders", `{"orderId":"M-1"}`), http.StatusConflict, "duplicate_request"); body.Message != "请勿重复提交" {
		t.Errorf("the conf's Message: a duplicate's message is %q", body.Message)
	}
	r := post("/transfers", `{"orderId":"M-1"}`)
	if body := wantRefusal(t, r, http.StatusTooEarly, "duplicate_request"); body.Message != "the transfer is still running" {
		t.Errorf("the rule's Message: a duplicate's message is %q", body.Message)
	}
	if r.Header.Get("Retry-After") == "" {
		t.Error("the 425 has no Retry-After")
	}
	if body := wantRefusal(t, post("/orders", `{}`), http.StatusBadRequest, "missing_field"); body.Message != "missing required field json:orderId" {
		t.Errorf("a missing key's 400 says %q, want its own message", body.Message)
	}

	admitted := make(chan resttest.Result, 1)
	go func() { admitted <- resttest.Do(t, http.MethodGet, base+"/exports", "", "X-User-Id", "alice") }()
	wantInside(t, e, "alice")
	over := resttest.Do(t, http.MethodGet, base+"/exports", "", "X-User-Id", "alice")
	if body := wantRefusal(t, over, http.StatusTooManyRequests, "limit_exceeded"); body.Message != "请勿重复提交" {
		t.Errorf("limit mode's 429 says %q, want the conf's Message", body.Message)
	}
	close(e.release["alice"])
	<-admitted
}

// TestRejectCodeMustBe4xx: a RejectCode that is not a 4xx, on the conf or
// on a rule, fails at start-up with ErrBadConfig naming it and the fix.
func TestRejectCodeMustBe4xx(t *testing.T) {
	rule := func(code int) []middleware.LockRule {
		return []middleware.LockRule{{Method: http.MethodPost, Path: "/orders", Keys: []string{"header:X-User-Id"}, RejectCode: code}}
	}
	for _, tc := range []struct {
		name string
		conf middleware.LockConf
		want string
	}{
		{"conf 503", middleware.LockConf{RejectCode: 503}, "RejectCode 503 must be a 4xx"},
		{"conf 200", middleware.LockConf{RejectCode: 200}, "RejectCode 200 must be a 4xx"},
		{"rule 500", middleware.LockConf{Rules: rule(500)}, "rule POST /orders: RejectCode 500 must be a 4xx"},
		{"rule 302", middleware.LockConf{Rules: rule(302)}, "RejectCode 302 must be a 4xx"},
		{"rule -1", middleware.LockConf{Rules: rule(-1)}, "RejectCode -1 must be a 4xx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := middleware.NewLockMiddleware(tc.conf, nil)
			if !errors.Is(err, middleware.ErrBadConfig) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "425 for dtm") {
				t.Fatalf("err = %v, want ErrBadConfig saying %q and naming the fix", err, tc.want)
			}
		})
	}
}

// A rule in limit mode refuses no duplicate, so a RejectCode on it would
// change nothing: refused at start-up rather than ignored.
func TestRejectCodeRefusedInLimitMode(t *testing.T) {
	_, err := middleware.NewLockMiddleware(middleware.LockConf{Rules: []middleware.LockRule{{
		Method: http.MethodGet, Path: "/exports", Keys: []string{"header:X-User-Id"}, Mode: middleware.ModeLimit, Permits: 2,
		RejectCode: http.StatusTooEarly,
	}}}, nil)
	if !errors.Is(err, middleware.ErrBadConfig) || !strings.Contains(err.Error(), "remove RejectCode") {
		t.Fatalf("err = %v, want ErrBadConfig saying to remove RejectCode", err)
	}
}
