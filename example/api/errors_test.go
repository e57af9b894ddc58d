package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/internal/testing/resttest"
)

// TestMiddlewareErrorsAsInPlainGoZero sends the demo the requests its lock
// middleware refuses (a duplicate, a missing key, a malformed body, a body
// over MaxBodyBytes, the store down) twice: once as main wires it, with
// the demo's error handler, and once with no error handler, as a plain
// goctl service has. Both answer each with the same status and the same
// body, {"code": ..., "message": ...}.
func TestMiddlewareErrorsAsInPlainGoZero(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	t.Cleanup(func() { httpx.SetErrorHandlerCtx(errorx.Handler) })
	type answer struct {
		status      int
		contentType string
		body        string
	}
	run := func(plain bool) []answer {
		c := loadConfig(t)
		// Below go-zero's own limit (RestConf.MaxBytes, 1 MiB like
		// MaxBodyBytes), which answers first, and in plain text.
		c.Lock.MaxBodyBytes = 64
		base, sc := startServer(t, c) // installs errorx.Handler, as main does
		if plain {
			httpx.SetErrorHandlerCtx(nil)
		}
		token := resttest.Token(t, c.Auth.AccessSecret, "alice")
		order := func(body string) resttest.Result {
			return resttest.Do(t, http.MethodPost, base+"/orders", body, "Authorization", "Bearer "+token)
		}
		redeem := func() resttest.Result {
			return resttest.Do(t, http.MethodPost, base+"/coupons/WELCOME/redeem", "")
		}
		if r := redeem(); r.Status != http.StatusOK {
			t.Fatalf("first redemption: %d %s", r.Status, r.Body)
		}
		results := []resttest.Result{
			redeem(),              // duplicate_request
			order(`{"amount":5}`), // missing_field
			order(`{"orderId":`),  // malformed_body
			order(`{"orderId":"o-1","note":"` + strings.Repeat("x", 100) + `"}`), // body_too_large
		}
		sc.Close()
		results = append(results, redeem()) // lock_unavailable
		var answers []answer
		for _, r := range results {
			answers = append(answers, answer{r.Status, r.Header.Get("Content-Type"), r.Body})
		}
		return answers
	}
	demo, plain := run(false), run(true)
	wantStatus := []int{http.StatusConflict, http.StatusBadRequest, http.StatusBadRequest,
		http.StatusRequestEntityTooLarge, http.StatusServiceUnavailable}
	for i := range plain {
		if !strings.HasPrefix(plain[i].body, `{"code":`) {
			t.Errorf("request %d: plain go-zero answered %s, not the middleware's JSON", i, plain[i].body)
		}
		if plain[i].status != wantStatus[i] {
			t.Errorf("request %d: plain go-zero answered %d %s, want %d", i, plain[i].status, plain[i].body, wantStatus[i])
		}
		if demo[i] != plain[i] {
			t.Errorf("request %d: the demo answers %+v, a plain go-zero service %+v", i, demo[i], plain[i])
		}
	}
}
