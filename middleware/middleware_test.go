package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

func TestConcurrentDuplicatesOneReachesHandler(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "claim:userId", "json:orderId"), newStore(srv))
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}},
		rest.WithJwt(jwtSecret))
	alice, bob := resttest.Token(t, jwtSecret, 1001), resttest.Token(t, jwtSecret, 1002)

	const n = 20
	results := make(chan resttest.Result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"A-1"}`, "Authorization", "Bearer "+alice)
		}()
	}
	<-g.Inside // one request holds the lock; all others must be refused meanwhile
	rejected := 0
	for rejected < n-1 {
		r := <-results
		if r.Status != http.StatusConflict {
			t.Fatalf("duplicate answered %d %s, want 409", r.Status, r.Body)
		}
		if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 5 {
			t.Fatalf("Retry-After = %q, want 1..5 seconds", r.Header.Get("Retry-After"))
		}
		var body struct{ Code, Message string }
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil || body.Code != "duplicate_request" {
			t.Fatalf("409 body %q is not the JSON refusal", r.Body)
		}
		rejected++
	}

	// While alice's A-1 is held: bob's A-1 and alice's A-2 are not blocked.
	others := make(chan resttest.Result, 2)
	go func() {
		others <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"A-1"}`, "Authorization", "Bearer "+bob)
	}()
	go func() {
		others <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"A-2"}`, "Authorization", "Bearer "+alice)
	}()
	<-g.Inside
	<-g.Inside
	close(g.Release)
	wg.Wait()
	if r := <-results; r.Status != http.StatusOK || !strings.Contains(r.Body, "A-1") {
		t.Fatalf("the one admitted request answered %d %s", r.Status, r.Body)
	}
	for i := 0; i < 2; i++ {
		if r := <-others; r.Status != http.StatusOK {
			t.Fatalf("another user or order answered %d %s, want 200", r.Status, r.Body)
		}
	}
	if got := g.Entered.Load(); got != 3 {
		t.Fatalf("%d requests reached the handler, want 3 (one duplicate group, two others)", got)
	}
	// Inflight mode: the same request is allowed again once the first ended.
	go func() { <-g.Inside }()
	if r := resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"A-1"}`, "Authorization", "Bearer "+alice); r.Status != http.StatusOK {
		t.Fatalf("the same request after the first ended: %d, want 200", r.Status)
	}
}

func TestWindowModeRefusesSequentialRepeats(t *testing.T) {
	srv := redistest.Start(t)
	const window = 400 * time.Millisecond
	m := mustMiddleware(t, resttest.OrdersConf(middleware.ModeWindow, window, "claim:userId", "json:orderId"), newStore(srv))
	var entered atomic.Int32
	status := atomic.Int32{}
	status.Store(http.StatusOK)
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: func(w http.ResponseWriter, r *http.Request) {
			entered.Add(1)
			if status.Load() == 0 {
				panic("handler failed")
			}
			w.WriteHeader(int(status.Load()))
		}}}, rest.WithJwt(jwtSecret))
	auth := "Bearer " + resttest.Token(t, jwtSecret, "u-7")
	post := func(order string) resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"`+order+`"}`, "Authorization", auth)
	}

	start := time.Now()
	if r := post("W-1"); r.Status != http.StatusOK {
		t.Fatalf("first request: %d %s", r.Status, r.Body)
	}
	if r := post("W-1"); r.Status != http.StatusConflict {
		t.Fatalf("repeat inside the window: %d, want 409", r.Status)
	}
	deadline := time.Now().Add(5 * time.Second)
	for post("W-1").Status == http.StatusConflict {
		if time.Now().After(deadline) {
			t.Fatal("the window never ended")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if elapsed := time.Since(start); elapsed < window {
		t.Fatalf("repeat allowed after %v, inside the %v window", elapsed, window)
	}

	// A 5xx or a panic releases at once: the retry runs.
	for _, tc := range []struct {
		name   string
		status int32
	}{{"5xx", http.StatusBadGateway}, {"panic", 0}} {
		status.Store(tc.status)
		first := post("W-" + tc.name)
		if tc.status != 0 && first.Status != int(tc.status) {
			t.Fatalf("%s: first answered %d", tc.name, first.Status)
		}
		status.Store(http.StatusOK)
		if r := post("W-" + tc.name); r.Status != http.StatusOK {
			t.Fatalf("retry after a %s answered %d, want 200 (lock released early)", tc.name, r.Status)
		}
	}
}

func TestInflightReleasesOnPanic(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/pay/:id", Keys: []string{"path:id", "ip"},
	}}}, newStore(srv))
	var panicked atomic.Bool
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/pay/:id", Handler: func(w http.ResponseWriter, r *http.Request) {
			if !panicked.Swap(true) {
				panic("first call fails")
			}
			w.WriteHeader(http.StatusOK)
		}}})
	if r := resttest.Do(t, http.MethodPost, base+"/pay/9", ""); r.Status != http.StatusInternalServerError {
		t.Fatalf("panicking handler answered %d, want go-zero's 500", r.Status)
	}
	if r := resttest.Do(t, http.MethodPost, base+"/pay/9", ""); r.Status != http.StatusOK {
		t.Fatalf("after a panic the lock was kept: %d", r.Status)
	}
	if keys := srv.Client(t).Keys(context.Background(), "zerolock:*").Val(); len(keys) != 0 {
		t.Fatalf("locks left in Redis: %v", keys)
	}
}

// TestReleasesWithoutWakeups: the middleware's locks are only tried, so
// its releases do not publish the waiters' wake-up
// (redislock.WithoutWakeups); the lock is released all the same.
func TestReleasesWithoutWakeups(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	m := mustMiddleware(t, middleware.LockConf{Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/pay/:id", Keys: []string{"path:id", "ip"},
	}}}, newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/pay/:id", Handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
		}}})
	before := redistest.Calls(t, admin, "spublish", "publish")
	for i := 0; i < 2; i++ {
		if r := resttest.Do(t, http.MethodPost, base+"/pay/7", ""); r.Status != http.StatusOK {
			t.Fatalf("request %d answered %d, want 200 (the first one's lock released)", i+1, r.Status)
		}
	}
	if got := redistest.Calls(t, admin, "spublish", "publish") - before; got != 0 {
		t.Errorf("the middleware's releases published %d times", got)
	}
}

func TestBadInput(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{
		MaxBodyBytes: 64,
		Rules: []middleware.LockRule{
			{Method: http.MethodPost, Path: "/orders", Keys: []string{"header:Idempotency-Key", "json:order.items.0.sku"}},
			{Method: http.MethodPost, Path: "/forms", Keys: []string{"form:ticket", "query:shop"}},
		},
	}, newStore(srv))
	var parsed atomic.Value
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/orders", Handler: func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				Order struct {
					Items []struct {
						Sku string `json:"sku"`
					} `json:"items"`
				} `json:"order"`
			}
			if err := httpx.Parse(r, &req); err != nil {
				httpx.ErrorCtx(r.Context(), w, err)
				return
			}
			parsed.Store(req.Order.Items[0].Sku)
			w.WriteHeader(http.StatusOK)
		}},
		{Method: http.MethodPost, Path: "/forms", Handler: func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				Ticket string `form:"ticket"`
			}
			if err := httpx.Parse(r, &req); err != nil {
				httpx.ErrorCtx(r.Context(), w, err)
				return
			}
			parsed.Store(req.Ticket)
			w.WriteHeader(http.StatusOK)
		}},
	})
	good := `{"order":{"items":[{"sku":"s-1"}]}}`
	chunked := func(body string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(body))
		req.ContentLength = -1 // sent chunked, without Content-Length
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "k-1")
		return req
	}
	form := func(body, query string, headers ...string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, base+"/forms"+query, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Add(headers[i], headers[i+1])
		}
		return req
	}
	orders := func(body string, headers ...string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Add(headers[i], headers[i+1])
		}
		return req
	}
	for _, tc := range []struct {
		name     string
		req      *http.Request
		status   int
		code     string
		mentions string
	}{
		{"missing header", orders(good), http.StatusBadRequest, "missing_field", "header:Idempotency-Key"},
		{"empty header", orders(good, "Idempotency-Key", ""), http.StatusBadRequest, "missing_field", "header:Idempotency-Key"},
		{"repeated header", orders(good, "Idempotency-Key", "a", "Idempotency-Key", "b"), http.StatusBadRequest, "ambiguous_field", "header:Idempotency-Key"},
		{"missing json field", orders(`{"order":{"items":[]}}`, "Idempotency-Key", "k"), http.StatusBadRequest, "missing_field", "json:order.items.0.sku"},
		{"malformed json", orders(`{"order":`, "Idempotency-Key", "k"), http.StatusBadRequest, "malformed_body", "json:order.items.0.sku"},
		{"trailing json", orders(good+`{}`, "Idempotency-Key", "k"), http.StatusBadRequest, "malformed_body", "json:"},
		{"empty body", orders("", "Idempotency-Key", "k"), http.StatusBadRequest, "malformed_body", "json:"},
		{"too large", orders(`{"order":{"items":[{"sku":"`+strings.Repeat("x", 100)+`"}]}}`, "Idempotency-Key", "k"), http.StatusRequestEntityTooLarge, "body_too_large", "too large"},
		{"too large chunked", chunked(`{"order":{"items":[{"sku":"` + strings.Repeat("x", 100) + `"}]}}`), http.StatusRequestEntityTooLarge, "body_too_large", "too large"},
		{"missing form field", form("other=1", "?shop=s"), http.StatusBadRequest, "missing_field", "form:ticket"},
		{"repeated form field", form("ticket=1&ticket=2", "?shop=s"), http.StatusBadRequest, "ambiguous_field", "form:ticket"},
		{"form field in body and query", form("ticket=1", "?shop=s&ticket=2"), http.StatusBadRequest, "ambiguous_field", "form:ticket"},
		{"repeated query", form("ticket=1", "?shop=a&shop=b"), http.StatusBadRequest, "ambiguous_field", "query:shop"},
		{"missing query", form("ticket=1", ""), http.StatusBadRequest, "missing_field", "query:shop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := resttest.Send(t, tc.req)
			if r.Status != tc.status {
				t.Fatalf("status %d %s, want %d", r.Status, r.Body, tc.status)
			}
			var body struct{ Code, Message string }
			if err := json.Unmarshal([]byte(r.Body), &body); err != nil || body.Code != tc.code {
				t.Fatalf("body %q is not the JSON error with code %q", r.Body, tc.code)
			}
			if !strings.Contains(body.Message, tc.mentions) {
				t.Fatalf("message %q does not name %q", body.Message, tc.mentions)
			}
		})
	}

	// Good requests: the handler parses the very body the middleware read.
	if r := resttest.Send(t, chunked(good)); r.Status != http.StatusOK || parsed.Load() != "s-1" {
		t.Fatalf("chunked good request: %d %s, handler parsed %v", r.Status, r.Body, parsed.Load())
	}
	if r := resttest.Send(t, orders(good, "Idempotency-Key", "k-2")); r.Status != http.StatusOK || parsed.Load() != "s-1" {
		t.Fatalf("good request: %d %s, handler parsed %v", r.Status, r.Body, parsed.Load())
	}
	if r := resttest.Send(t, form("ticket=t-9", "?shop=s")); r.Status != http.StatusOK || parsed.Load() != "t-9" {
		t.Fatalf("good form: %d %s, handler parsed %v", r.Status, r.Body, parsed.Load())
	}
}

func TestRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	store := newStore(srv)
	srv.Kill()
	conf := middleware.LockConf{Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/pay/:id", Keys: []string{"path:id", "header:X-User"},
	}}}
	for _, tc := range []struct {
		name     string
		failOpen bool
		want     int
	}{{"fail closed", false, http.StatusServiceUnavailable}, {"fail open", true, http.StatusOK}} {
		t.Run(tc.name, func(t *testing.T) {
			c := conf
			c.FailOpen = tc.failOpen
			m := mustMiddleware(t, c, store)
			base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
				{Method: http.MethodPost, Path: "/pay/:id", Handler: func(w http.ResponseWriter, r *http.Request) {}},
				{Method: http.MethodGet, Path: "/free", Handler: func(w http.ResponseWriter, r *http.Request) {}},
			})
			outcome := map[bool]string{false: "store_error", true: "fail_open"}[tc.failOpen]
			before := counter(t, "POST /pay/:id", outcome)
			r := resttest.Do(t, http.MethodPost, base+"/pay/1", "", "X-User", "u")
			if got := counter(t, "POST /pay/:id", outcome) - before; got != 1 {
				t.Errorf("outcome %s counted %v times, want 1", outcome, got)
			}
			if r.Status != tc.want {
				t.Fatalf("with Redis down: %d %s, want %d", r.Status, r.Body, tc.want)
			}
			if tc.want == http.StatusServiceUnavailable && !strings.Contains(r.Body, `"code":"lock_unavailable"`) {
				t.Fatalf("503 body %q is not the JSON refusal", r.Body)
			}
			if r := resttest.Do(t, http.MethodGet, base+"/free", ""); r.Status != http.StatusOK {
				t.Fatalf("unmatched route with Redis down: %d, want 200 (passes through)", r.Status)
			}
		})
	}
}

func TestForRule(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Expire: time.Minute}, newStore(srv))
	lockPay, err := m.ForRule(middleware.LockRule{Method: http.MethodPost, Path: "/pay/:id", Keys: []string{"path:id", "ip"}})
	if err != nil {
		t.Fatal(err)
	}
	var entered atomic.Int32
	base := resttest.Serve(t, func(s *rest.Server) {},
		rest.WithMiddlewares([]rest.Middleware{lockPay}, rest.Route{
			Method: http.MethodPost, Path: "/pay/:id",
			Handler: func(w http.ResponseWriter, r *http.Request) { entered.Add(1) },
		}))
	for i, want := range []int{http.StatusOK, http.StatusConflict} {
		if r := resttest.Do(t, http.MethodPost, base+"/pay/5", ""); r.Status != want {
			t.Fatalf("request %d: %d, want %d", i, r.Status, want)
		}
	}
	if r := resttest.Do(t, http.MethodPost, base+"/pay/6", ""); r.Status != http.StatusOK {
		t.Fatalf("another id: %d, want 200", r.Status)
	}
	if entered.Load() != 2 {
		t.Fatalf("%d requests reached the handler, want 2", entered.Load())
	}
	if _, err := m.ForRule(middleware.LockRule{Method: "POST", Path: "/p", Keys: []string{"path:id"}}); !errors.Is(err, middleware.ErrBadConfig) {
		t.Fatalf("ForRule with a path key the pattern lacks: %v, want ErrBadConfig", err)
	}
}

func TestConfigValidation(t *testing.T) {
	rule := func(method, path string, keys ...string) middleware.LockRule {
		return middleware.LockRule{Method: method, Path: path, Keys: keys}
	}
	for _, tc := range []struct {
		name string
		conf middleware.LockConf
		want string
	}{
		{"unknown source", middleware.LockConf{Rules: []middleware.LockRule{rule("POST", "/a", "cookie:sid")}}, "cookie"},
		{"malformed json path", middleware.LockConf{Rules: []middleware.LockRule{rule("POST", "/a", "json:a..b")}}, "json:a..b"},
		{"path key not in pattern", middleware.LockConf{Rules: []middleware.LockRule{rule("POST", "/a/:id", "path:oid")}}, "path:oid"},
		{"lower-case method", middleware.LockConf{Rules: []middleware.LockRule{rule("post", "/a", "ip")}}, "method"},
		{"relative path", middleware.LockConf{Rules: []middleware.LockRule{rule("POST", "a", "ip")}}, "path"},
		{"two rules for a route", middleware.LockConf{Rules: []middleware.LockRule{rule("POST", "/a", "ip"), rule("POST", "/a", "ip")}}, "duplicate"},
		{"standard claim", middleware.LockConf{Rules: []middleware.LockRule{rule("POST", "/a", "claim:sub")}}, "claim:sub"},
		{"unknown mode", middleware.LockConf{Mode: "forever", Rules: []middleware.LockRule{rule("POST", "/a", "ip")}}, "forever"},
		{"negative expire", middleware.LockConf{Expire: -time.Second, Rules: []middleware.LockRule{rule("POST", "/a", "ip")}}, "expire"},
		{"5xx reject code", middleware.LockConf{RejectCode: 503}, "RejectCode"},
		{"negative body limit", middleware.LockConf{MaxBodyBytes: -1}, "MaxBodyBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := middleware.NewLockMiddleware(tc.conf, nil)
			if !errors.Is(err, middleware.ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadConfig mentioning %q", err, tc.want)
			}
		})
	}
}

func ExampleLockMiddleware_ForRule() {
	mr, _ := miniredis.Run() // a real service passes redis.MustNewRedis(c.Redis)
	defer mr.Close()
	m := middleware.MustNewLockMiddleware(middleware.LockConf{}, zredis.New(mr.Addr(), zredis.WithIdentity()))
	lockPay, err := m.ForRule(middleware.LockRule{
		Method: http.MethodPost, Path: "/orders/:id/pay", Keys: []string{"path:id", "claim:userId"},
	})
	fmt.Println(err)
	_ = rest.WithMiddlewares([]rest.Middleware{lockPay}, rest.Route{
		Method: http.MethodPost, Path: "/orders/:id/pay",
		Handler: func(w http.ResponseWriter, r *http.Request) {},
	})
	// Output: <nil>
}
