package middleware_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
)

// A sequential retry gets the first answer, byte for byte, without the
// handler running again; the first answer still carries its cookie.
func TestReplaySequentialRetry(t *testing.T) {
	srv := redistest.Start(t)
	var p payments
	base := servePayments(t, replayConf("/pay", payKeys...), newStore(srv), "/pay", &p)

	first := pay(t, base+"/pay", "k-seq", `{"amount":5}`)
	if first.Status != http.StatusCreated || !strings.Contains(first.Body, "pay-1") {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	if c := first.Header.Get("Set-Cookie"); !strings.HasPrefix(c, "session=s1") {
		t.Fatalf("first answer's Set-Cookie = %q, want the handler's", c)
	}
	for i := 0; i < 3; i++ {
		sameAnswer(t, first, pay(t, base+"/pay", "k-seq", `{"amount":5}`))
	}
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
	// Another key is another request.
	if r := pay(t, base+"/pay", "k-seq-2", `{"amount":5}`); r.Status != http.StatusCreated || !strings.Contains(r.Body, "pay-2") {
		t.Fatalf("another key: %d %s", r.Status, r.Body)
	}
}

// Thirty first requests at once under one new key: one runs, the others
// are refused while it runs, and every retry after it is replayed.
func TestReplayConcurrentFirstRequests(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, replayConf("/orders", payKeys...), newStore(srv))
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}}, rest.WithJwt(jwtSecret))
	headers := payHeaders(t, payer, "k-30")
	send := func() resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"C-1"}`, headers...)
	}

	const n = 30
	results := make(chan resttest.Result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- send()
		}()
	}
	<-g.Inside // one runs; the others must be refused while it does
	for i := 0; i < n-1; i++ {
		r := <-results
		if r.Status != http.StatusConflict || errorCode(r) != "duplicate_request" {
			t.Fatalf("concurrent duplicate: %d %s, want 409 duplicate_request", r.Status, r.Body)
		}
		if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 5 {
			t.Fatalf("Retry-After = %q, want 1..5 seconds", r.Header.Get("Retry-After"))
		}
	}
	close(g.Release)
	wg.Wait()
	first := <-results
	if first.Status != http.StatusOK || !strings.Contains(first.Body, "C-1") {
		t.Fatalf("the request that ran: %d %s", first.Status, first.Body)
	}

	retries := make(chan resttest.Result, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			retries <- send()
		}()
	}
	wg.Wait()
	close(retries)
	for r := range retries {
		if r.Status != first.Status || r.Body != first.Body || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry after completion: %d %q (replayed %q), want the first answer replayed",
				r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
		}
	}
	if got := g.Entered.Load(); got != 1 {
		t.Fatalf("the handler ran %d times, want once", got)
	}
}

// A retry with another payload, query or path under the same key is
// refused with 422 and leaves the stored answer alone: the original
// request, even spelled differently as JSON, is still replayed.
func TestReplayMismatchedPayload(t *testing.T) {
	srv := redistest.Start(t)
	var p payments
	base := servePayments(t, replayConf("/accounts/:id/pay", payKeys...), newStore(srv), "/accounts/:id/pay", &p)
	const route = "POST /accounts/:id/pay"
	replayed, mismatched := counter(t, route, "replayed"), counter(t, route, "mismatch")

	first := pay(t, base+"/accounts/a1/pay?currency=EUR", "k-mis", `{"amount":5,"note":"x"}`)
	if first.Status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	for _, tc := range []struct{ name, url, body string }{
		{"body", "/accounts/a1/pay?currency=EUR", `{"amount":6,"note":"x"}`},
		{"query", "/accounts/a1/pay?currency=USD", `{"amount":5,"note":"x"}`},
		{"path", "/accounts/a2/pay?currency=EUR", `{"amount":5,"note":"x"}`},
		{"no body", "/accounts/a1/pay?currency=EUR", ``},
	} {
		r := pay(t, base+tc.url, "k-mis", tc.body)
		if r.Status != http.StatusUnprocessableEntity || errorCode(r) != "idempotency_key_reused" {
			t.Fatalf("%s changed: %d %s, want 422 idempotency_key_reused", tc.name, r.Status, r.Body)
		}
	}
	sameAnswer(t, first, pay(t, base+"/accounts/a1/pay?currency=EUR", "k-mis", "{ \"note\": \"x\",\n \"amount\": 5.0 }\n"))
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
	if got := counter(t, route, "mismatch") - mismatched; got != 4 {
		t.Errorf("mismatch counted %v times, want 4", got)
	}
	if got := counter(t, route, "replayed") - replayed; got != 1 {
		t.Errorf("replayed counted %v times, want 1", got)
	}
}

// A 5xx or a panic is not kept: the retry runs. A 4xx is the answer to the
// request, and is replayed.
func TestReplayFailuresNotKept(t *testing.T) {
	srv := redistest.Start(t)
	var p payments
	panicky := func(w http.ResponseWriter, r *http.Request) {
		if p.status.Load() == -1 {
			p.runs.Add(1)
			panic("handler failed")
		}
		p.handle(w, r)
	}
	m := mustMiddleware(t, replayConf("/pay", payKeys...), newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/pay", Handler: panicky}}, rest.WithJwt(jwtSecret))

	for _, tc := range []struct {
		name      string
		status    int32 // -1: panic
		runsTwice bool
	}{
		{"500", http.StatusInternalServerError, true},
		{"503", http.StatusServiceUnavailable, true},
		{"panic", -1, true},
		{"400", http.StatusBadRequest, false},
		{"404", http.StatusNotFound, false},
		{"302", http.StatusFound, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "k-fail-" + tc.name
			before := p.runs.Load()
			p.status.Store(tc.status)
			first := pay(t, base+"/pay", key, `{"amount":1}`)
			p.status.Store(0)
			retry := pay(t, base+"/pay", key, `{"amount":1}`)
			runs := p.runs.Load() - before
			if tc.runsTwice {
				if runs != 2 || retry.Status != http.StatusCreated || retry.Header.Get("Idempotent-Replayed") != "" {
					t.Fatalf("after %s the retry got %d (replayed %q), handler ran %d times; want it run again",
						tc.name, retry.Status, retry.Header.Get("Idempotent-Replayed"), runs)
				}
				return
			}
			if first.Status != int(tc.status) || runs != 1 {
				t.Fatalf("first answered %d, handler ran %d times", first.Status, runs)
			}
			sameAnswer(t, first, retry)
		})
	}
}

// A second middleware on a new store, behind a new server (a restarted
// service), replays what the first stored: the result lives in Redis.
func TestReplayAfterRestart(t *testing.T) {
	srv := redistest.Start(t)
	c := replayConf("/pay", payKeys...)
	var p1, p2 payments
	first := pay(t, servePayments(t, c, newStore(srv), "/pay", &p1)+"/pay", "k-restart", `{"amount":5}`)
	if first.Status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	base2 := servePayments(t, c, newStore(srv), "/pay", &p2)
	sameAnswer(t, first, pay(t, base2+"/pay", "k-restart", `{"amount":5}`))
	if n := p2.runs.Load(); n != 0 {
		t.Fatalf("the restarted service ran the handler %d times, want none", n)
	}
}

// go-zero's timeout answers 503 while the handler still runs; the handler
// completes, its answer is kept, and the retry gets it. A client that left
// a handler that completed gets its answer on retry too. A 4xx once the
// request's context ended is the handler reporting the cancellation: the
// retry runs.
func TestReplayCompletedAfterTimeoutOrDisconnect(t *testing.T) {
	srv := redistest.Start(t)
	c := resttest.Conf(t)
	c.Timeout = 300 // ms
	// go-zero's log middleware dumps the body of a request its timeout
	// answered while the handler may still read it: a race of go-zero's,
	// whatever the handler.
	c.Middlewares.Log = false
	var p payments
	served, inside := make(chan struct{}, 1), make(chan struct{}, 1)
	m := mustMiddleware(t, replayConf("/pay", payKeys...), newStore(srv))
	base := resttest.ServeConf(t, c, func(s *rest.Server) {
		s.Use(func(next http.HandlerFunc) http.HandlerFunc { // outside the lock: the result is stored
			return func(w http.ResponseWriter, r *http.Request) {
				next(w, r)
				if r.Header.Get("X-Wait") != "" {
					served <- struct{}{}
				}
			}
		})
		s.Use(m.Handle)
	}, []rest.Route{{Method: http.MethodPost, Path: "/pay", Handler: func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Wait") != "" {
			inside <- struct{}{}
			<-r.Context().Done()
		}
		if r.Header.Get("X-Fail") != "" {
			p.runs.Add(1)
			w.WriteHeader(http.StatusBadRequest) // as go-zero answers a cancelled call's error
			return
		}
		p.handle(w, r)
	}}}, rest.WithJwt(jwtSecret))
	send := func(ctx context.Context, key string, headers ...string) resttest.Result {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/pay", strings.NewReader(`{"amount":7}`))
		req.Header.Set("Content-Type", "application/json")
		headers = append(payHeaders(t, payer, key), headers...)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return resttest.Result{}
		}
		defer resp.Body.Close()
		return resttest.Result{Status: resp.StatusCode, Header: resp.Header}
	}

	t.Run("timeout", func(t *testing.T) {
		before := p.runs.Load()
		if r := send(context.Background(), "k-timeout", "X-Wait", "1"); r.Status != http.StatusServiceUnavailable {
			t.Fatalf("first: %d, want go-zero's 503", r.Status)
		}
		<-inside
		<-served
		r := pay(t, base+"/pay", "k-timeout", `{"amount":7}`)
		if r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "true" || p.runs.Load()-before != 1 {
			t.Fatalf("retry after a timeout: %d %s (replayed %q), want the handler's 201 replayed",
				r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
		}
	})
	for _, tc := range []struct {
		name   string
		fail   string
		replay bool
	}{{"left, completed", "", true}, {"left, failed", "1", false}} {
		t.Run(tc.name, func(t *testing.T) {
			key := "k-left-" + tc.fail
			before := p.runs.Load()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				send(ctx, key, "X-Wait", "1", "X-Fail", tc.fail)
			}()
			<-inside // the handler now waits for the client to leave
			cancel()
			<-done
			<-served
			r := pay(t, base+"/pay", key, `{"amount":7}`)
			replayed := r.Header.Get("Idempotent-Replayed") == "true"
			if replayed != tc.replay || r.Status != http.StatusCreated {
				t.Fatalf("retry: %d, replayed %v; want 201, replayed %v", r.Status, replayed, tc.replay)
			}
			if runs, want := p.runs.Load()-before, map[bool]int32{true: 1, false: 2}[tc.replay]; runs != want {
				t.Fatalf("the handler ran %d times, want %d", runs, want)
			}
		})
	}
}

// Renew keeps a replay lock alive while the handler runs, and storing the
// result ends the renewal without losing the lock.
func TestReplayWithRenew(t *testing.T) {
	srv := redistest.Start(t)
	c := replayConf("/pay", payKeys...)
	c.Renew, c.Expire = true, 300*time.Millisecond
	var p payments
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Second): // three expiries: only renewal keeps the lock
		case <-r.Context().Done():
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		p.handle(w, r)
	}
	m := mustMiddleware(t, c, newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/pay", Handler: slow}}, rest.WithJwt(jwtSecret))
	first := pay(t, base+"/pay", "k-renew", `{}`)
	if first.Status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.Status, first.Body)
	}
	sameAnswer(t, first, pay(t, base+"/pay", "k-renew", `{}`))
}
