package middleware_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// refusalBody is the JSON body of the middleware's answers.
type refusalBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// wantRefusal fails the test unless r is status with the JSON body of
// code.
func wantRefusal(t *testing.T, r resttest.Result, status int, code string) refusalBody {
	t.Helper()
	var body refusalBody
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil || r.Status != status || body.Code != code {
		t.Fatalf("answered %d %q, want %d with the JSON body of %s", r.Status, r.Body, status, code)
	}
	return body
}

// TestDoubleClickBurstUnderDocsErrorHandler: with go-zero's documented
// error handler installed (every error but its CodeMsg answered with a
// bare 500), a burst of 20 double clicks still gets one run and 19
// answers of 409 with the JSON refusal, never a 5xx: the middleware does
// not answer through httpx's error handler.
func TestDoubleClickBurstUnderDocsErrorHandler(t *testing.T) {
	installDocsErrorHandler(t)
	srv := redistest.Start(t)
	m := mustMiddleware(t, resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "header:X-User-Id", "json:orderId"), newStore(srv))
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}})

	const n = 20
	results := make(chan resttest.Result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"D-1"}`, "X-User-Id", "alice")
		}()
	}
	<-g.Inside
	for i := 0; i < n-1; i++ {
		r := <-results
		if r.Status >= http.StatusInternalServerError {
			t.Fatalf("a duplicate under the docs' error handler answered %d %q, want 409", r.Status, r.Body)
		}
		wantRefusal(t, r, http.StatusConflict, "duplicate_request")
		if r.Header.Get("Retry-After") == "" {
			t.Fatal("a refused duplicate has no Retry-After")
		}
	}
	close(g.Release)
	wg.Wait()
	if r := <-results; r.Status != http.StatusOK {
		t.Fatalf("the admitted request answered %d %s", r.Status, r.Body)
	}
}

// TestEveryAnswerUnderDocsErrorHandler: with go-zero's documented error
// handler installed, every answer of the middleware keeps its status and
// JSON body: the 400s of a missing or repeated key and of a malformed
// body, the 413 of a body over MaxBodyBytes, the 422 of a reused
// idempotency key, the 429 of limit mode, and a replayed response.
func TestEveryAnswerUnderDocsErrorHandler(t *testing.T) {
	installDocsErrorHandler(t)
	srv := redistest.Start(t)
	c := middleware.LockConf{MaxBodyBytes: 64, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/orders", Keys: []string{"header:X-User-Id", "json:orderId"}},
		{Method: http.MethodPost, Path: "/pay", Keys: []string{"header:Idempotency-Key"}, Mode: middleware.ModeReplay,
			SharedKeys: true},
	}}
	m := mustMiddleware(t, c, newStore(srv))
	var p payments
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/orders", Handler: func(w http.ResponseWriter, r *http.Request) {}},
		{Method: http.MethodPost, Path: "/pay", Handler: p.handle},
	})
	order := func(body string, headers ...string) resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/orders", body, append([]string{"X-User-Id", "alice"}, headers...)...)
	}
	wantRefusal(t, order(`{"amount":5}`), http.StatusBadRequest, "missing_field")
	wantRefusal(t, order(`{"orderId":`), http.StatusBadRequest, "malformed_body")
	wantRefusal(t, order(`{"orderId":"o-1","note":"`+strings.Repeat("x", 100)+`"}`), http.StatusRequestEntityTooLarge, "body_too_large")
	req, err := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(`{"orderId":"o-1"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("X-User-Id", "alice")
	req.Header.Add("X-User-Id", "bob")
	wantRefusal(t, resttest.Send(t, req), http.StatusBadRequest, "ambiguous_field")

	first := pay(t, base+"/pay", "k-docs", `{"amount":5}`)
	if first.Status != http.StatusCreated {
		t.Fatalf("the first payment: %d %s", first.Status, first.Body)
	}
	sameAnswer(t, first, pay(t, base+"/pay", "k-docs", `{"amount":5}`))
	wantRefusal(t, pay(t, base+"/pay", "k-docs", `{"amount":7}`), http.StatusUnprocessableEntity, "idempotency_key_reused")

	lm := mustMiddleware(t, exportsConf(1), newStore(srv))
	e := newExports("alice")
	get := serveExports(t, lm, e)
	admitted := make(chan resttest.Result, 1)
	go func() { admitted <- get("alice") }()
	wantInside(t, e, "alice")
	wantRefusal(t, get("alice"), http.StatusTooManyRequests, "limit_exceeded")
	close(e.release["alice"])
	if r := <-admitted; r.Status != http.StatusOK {
		t.Fatalf("the admitted export: %d %s", r.Status, r.Body)
	}
}

// TestBreakerStaysClosedUnderDocsErrorHandler: go-zero's rest.Server has
// a breaker per route that counts every 5xx. With the docs' error handler
// installed, a burst of 40 duplicates of one user's request leaves the
// route's breaker closed: the other users' requests to the same route
// that follow are all served (a refusal answered 500 would open it, and
// go-zero would drop them with 503).
func TestBreakerStaysClosedUnderDocsErrorHandler(t *testing.T) {
	installDocsErrorHandler(t)
	srv := redistest.Start(t)
	m := mustMiddleware(t, resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "header:X-User-Id", "json:orderId"), newStore(srv))
	inside, release := make(chan struct{}, 1), make(chan struct{})
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-User-Id") == "alice" {
				inside <- struct{}{}
				<-release
			}
		}}})
	send := func(user string) resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"B-1"}`, "X-User-Id", user)
	}
	first := make(chan resttest.Result, 1)
	go func() { first <- send("alice") }()
	<-inside

	const burst = 40
	var wg sync.WaitGroup
	statuses := make(chan int, burst)
	for i := 0; i < burst; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses <- send("alice").Status
		}()
	}
	wg.Wait()
	close(statuses)
	for i := 0; i < 10; i++ {
		if r := send("user-" + string(rune('a'+i))); r.Status != http.StatusOK {
			t.Errorf("another user's request after the burst: %d %q, want 200 (the route's breaker opened)", r.Status, r.Body)
		}
	}
	for s := range statuses {
		if s != http.StatusConflict {
			t.Errorf("a duplicate in the burst answered %d, want 409", s)
		}
	}
	close(release)
	if r := <-first; r.Status != http.StatusOK {
		t.Fatalf("the admitted request: %d %s", r.Status, r.Body)
	}
}

// TestDuplicateNamesMode: the refusal of a duplicate names the mode of the
// rule that refused it in ModeHeader, so that a client (httpclient) can
// tell a replay rule, whose retry gets the first response, from one whose
// retry would run the handler again or be refused again.
func TestDuplicateNamesMode(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []string{middleware.ModeInflight, middleware.ModeWindow, middleware.ModeReplay} {
		t.Run(mode, func(t *testing.T) {
			c := resttest.OrdersConf(mode, 5*time.Second, "header:X-User-Id", "json:orderId")
			c.SharedKeys = true
			m := mustMiddleware(t, c, newStore(srv))
			g := resttest.NewGate()
			base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
				[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}})
			first := make(chan resttest.Result, 1)
			go func() {
				first <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"M-`+mode+`"}`, "X-User-Id", "alice")
			}()
			<-g.Inside
			dup := resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"M-`+mode+`"}`, "X-User-Id", "alice")
			close(g.Release)
			<-first
			wantRefusal(t, dup, http.StatusConflict, "duplicate_request")
			if got := dup.Header.Get(middleware.ModeHeader); got != mode {
				t.Fatalf("the refusal's %s is %q, want %q", middleware.ModeHeader, got, mode)
			}
		})
	}
}
