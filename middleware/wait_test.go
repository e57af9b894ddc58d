package middleware_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// waitConf is a replay rule on POST /pay, per caller and idempotency key,
// whose duplicates wait up to wait for the first request's result.
func waitConf(wait time.Duration) middleware.LockConf {
	return middleware.LockConf{Mode: middleware.ModeReplay, Expire: 20 * time.Second, Wait: wait,
		Rules: []middleware.LockRule{{Method: http.MethodPost, Path: "/pay",
			Keys: []string{"header:Authorization", "header:Idempotency-Key"}}}}
}

// serveGatedPayments serves p's payments on POST /pay behind m, each held
// until the test sends on (or closes) the returned channel; entered tells
// each entry.
func serveGatedPayments(t *testing.T, rc rest.RestConf, m *middleware.LockMiddleware, p *payments) (base string, release chan struct{}, entered chan struct{}) {
	t.Helper()
	release, entered = make(chan struct{}), make(chan struct{}, 10)
	base = resttest.ServeConf(t, rc, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
		Method: http.MethodPost, Path: "/pay", Handler: func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			<-release
			p.handle(w, r)
		},
	}})
	return base, release, entered
}

func payWaiting(t *testing.T, base, user, key string) resttest.Result {
	t.Helper()
	return resttest.Do(t, http.MethodPost, base+"/pay", `{"amount":5}`,
		"Authorization", "Bearer "+user, "Idempotency-Key", key)
}

// waiting polls until a duplicate marked the key as waited on, which its
// waiting try does in the script that saw the key held.
func waiting(t *testing.T, srv *redistest.Server) {
	t.Helper()
	admin := srv.Client(t)
	deadline := time.Now().Add(5 * time.Second)
	for !redistest.WaitedOn(context.Background(), admin) {
		if time.Now().After(deadline) {
			t.Fatal("no duplicate is waiting on the key")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWaitReplaysToADoubleClick: with Wait, the second click of a double
// click, sent while the first runs, waits and gets the first's answer
// replayed in every respect (status, body bytes, headers,
// Idempotent-Replayed: true) instead of a 409; the handler runs once. The
// backend's back-off is a minute, so only the wake-up that the stored
// result announces can answer it within the request's timeout: a waiter
// that polled would be refused. Without Wait (TestReplayConcurrentFirstRequests)
// it is refused at once.
func TestWaitReplaysToADoubleClick(t *testing.T) {
	srv := redistest.Start(t)
	backend := redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups(), redislock.WithBackoff(time.Minute, time.Minute))
	m, err := middleware.NewLockMiddlewareWithBackend(waitConf(30*time.Second), backend)
	if err != nil {
		t.Fatal(err)
	}
	var p payments
	base, release, entered := serveGatedPayments(t, resttest.Conf(t), m, &p)

	first := make(chan resttest.Result, 1)
	go func() { first <- payWaiting(t, base, "alice", "k-double") }()
	<-entered
	second := make(chan resttest.Result, 1)
	go func() { second <- payWaiting(t, base, "alice", "k-double") }()
	waiting(t, srv)
	close(release)
	answer := <-first
	if answer.Status != http.StatusCreated || !strings.Contains(answer.Body, "pay-1") {
		t.Fatalf("the first click: %d %s", answer.Status, answer.Body)
	}
	sameAnswer(t, answer, <-second)
	if n := p.runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}

// TestWaitEndsWithTheRefusal: a duplicate still waiting when Wait passes
// gets the refusal it gets without Wait (409 with Retry-After), and one
// whose Wait outlasts go-zero's request timeout is refused before the
// timeout would answer 503, which go-zero's breaker counts.
func TestWaitEndsWithTheRefusal(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wait    time.Duration
		timeout time.Duration
	}{
		{"Wait passes", 300 * time.Millisecond, 3 * time.Second},
		{"the request's timeout comes first", 10 * time.Second, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			m := mustMiddleware(t, waitConf(tc.wait), newStore(srv))
			rc := resttest.Conf(t)
			rc.Timeout = tc.timeout.Milliseconds()
			var p payments
			base, release, entered := serveGatedPayments(t, rc, m, &p)
			first := make(chan resttest.Result, 1)
			go func() { first <- payWaiting(t, base, "alice", "k-slow") }()
			<-entered
			r := payWaiting(t, base, "alice", "k-slow")
			if r.Status != http.StatusConflict || r.Header.Get("Retry-After") == "" {
				t.Fatalf("a duplicate past Wait: %d %s (Retry-After %q), want 409 with Retry-After",
					r.Status, r.Body, r.Header.Get("Retry-After"))
			}
			close(release)
			<-first
			if n := p.runs.Load(); n != 1 {
				t.Fatalf("the handler ran %d times, want once", n)
			}
		})
	}
}

// TestWaitTakesOverAFailure: a duplicate waiting on a first request that
// fails (a 5xx frees the key, nothing is stored) takes the key and runs,
// as a retry after the failure would.
func TestWaitTakesOverAFailure(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, waitConf(30*time.Second), newStore(srv))
	var p payments
	p.status.Store(http.StatusBadGateway)
	base, release, entered := serveGatedPayments(t, resttest.Conf(t), m, &p)
	first := make(chan resttest.Result, 1)
	go func() { first <- payWaiting(t, base, "alice", "k-fail") }()
	<-entered
	second := make(chan resttest.Result, 1)
	go func() { second <- payWaiting(t, base, "alice", "k-fail") }()
	waiting(t, srv)
	release <- struct{}{}
	if r := <-first; r.Status != http.StatusBadGateway {
		t.Fatalf("the first: %d %s", r.Status, r.Body)
	}
	<-entered // the waiting duplicate runs
	p.status.Store(http.StatusCreated)
	release <- struct{}{}
	if r := <-second; r.Status != http.StatusCreated || !strings.Contains(r.Body, "pay-2") || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the duplicate after a failure: %d %s, want its own run", r.Status, r.Body)
	}
}

// TestWaitSettings: Wait is for replay mode, not negative, and needs a
// backend whose locks can wait for a stored result.
func TestWaitSettings(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name    string
		change  func(*middleware.LockConf)
		mention string
	}{
		{"a rule's Wait outside replay mode", func(c *middleware.LockConf) {
			c.Rules[0].Mode, c.Rules[0].Wait = middleware.ModeInflight, time.Second
		}, "Wait is for replay mode only"},
		{"negative Wait", func(c *middleware.LockConf) { c.Wait = -time.Second }, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := waitConf(0)
			tc.change(&c)
			_, err := middleware.NewLockMiddleware(c, newStore(srv))
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err = %v, want ErrBadConfig mentioning %q", err, tc.mention)
			}
		})
	}
	// The configuration's Wait applies to its replay rules only.
	c := waitConf(time.Second)
	c.Rules[0].Mode = middleware.ModeInflight
	if _, err := middleware.NewLockMiddleware(c, newStore(srv)); err != nil {
		t.Fatalf("the configuration's Wait beside an inflight rule: %v", err)
	}
}
