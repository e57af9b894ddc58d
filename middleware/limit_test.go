package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

const exportsRoute = "GET /exports"

// exportsConf limits GET /exports to permits concurrent requests per
// X-User-Id.
func exportsConf(permits int) middleware.LockConf {
	return middleware.LockConf{Rules: []middleware.LockRule{{
		Method: http.MethodGet, Path: "/exports", Mode: middleware.ModeLimit, Permits: permits,
		Keys: []string{"header:X-User-Id"},
	}}}
}

// exports is an export handler that holds each request until the test
// lets one of its user's requests out (a send on release[user]) or the
// request ends.
type exports struct {
	inside  chan string // the user of each request, as it enters
	release map[string]chan struct{}
}

func newExports(users ...string) *exports {
	e := &exports{inside: make(chan string, 100), release: make(map[string]chan struct{})}
	for _, u := range users {
		e.release[u] = make(chan struct{})
	}
	return e
}

func (e *exports) handle(w http.ResponseWriter, r *http.Request) {
	user := r.Header.Get("X-User-Id")
	e.inside <- user
	select {
	case <-e.release[user]:
	case <-r.Context().Done():
		return
	}
	httpx.OkJsonCtx(r.Context(), w, map[string]string{"user": user})
}

// serveExports serves GET /exports through m with e.
func serveExports(t *testing.T, m *middleware.LockMiddleware, e *exports, opts ...rest.RouteOption) func(user string) resttest.Result {
	t.Helper()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodGet, Path: "/exports", Handler: e.handle}}, opts...)
	return func(user string) resttest.Result {
		return resttest.Do(t, http.MethodGet, base+"/exports", "", "X-User-Id", user)
	}
}

// letOut releases user's request from the handler, failing if it is no
// longer there (its context ended first) rather than waiting forever.
func letOut(t *testing.T, e *exports, user string) {
	t.Helper()
	select {
	case e.release[user] <- struct{}{}:
	case <-time.After(10 * time.Second):
		t.Fatalf("the request of %s was no longer in the handler: its context ended before it was let out", user)
	}
}

// wantInside waits for the next request to enter the handler, and checks
// that it is user's.
func wantInside(t *testing.T, e *exports, user string) {
	t.Helper()
	select {
	case got := <-e.inside:
		if got != user {
			t.Fatalf("a request of %s entered, want %s", got, user)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no request of %s entered the handler", user)
	}
}

// wantOverLimit checks the answer to a request over the limit: 429, a
// Retry-After of 1 to maxSecs seconds, and the JSON refusal.
func wantOverLimit(t *testing.T, r resttest.Result, maxSecs int) {
	t.Helper()
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("over the limit: %d %s, want 429", r.Status, r.Body)
	}
	if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 || secs > maxSecs {
		t.Fatalf("Retry-After = %q, want 1..%d seconds", r.Header.Get("Retry-After"), maxSecs)
	}
	var body struct{ Code, Message string }
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil || body.Code != "limit_exceeded" ||
		!strings.Contains(body.Message, "at most 2") {
		t.Fatalf("429 body %q is not the JSON refusal naming the limit", r.Body)
	}
}

// TestLimitCapsConcurrentRequestsPerKey: with Permits 2, two concurrent
// exports of one user are served, the third is refused with 429,
// Retry-After and the JSON refusal, another user is unaffected, and once
// one export finishes a new one is served; on go-zero's store and a
// go-redis client on one redis-server, and on go-zero's store on Cluster.
// The refusal is counted as limited.
func TestLimitCapsConcurrentRequestsPerKey(t *testing.T) {
	srv := redistest.Start(t)
	cluster := redistest.SharedCluster(t)
	for _, tc := range []struct {
		name string
		new  func(middleware.LockConf) (*middleware.LockMiddleware, error)
	}{
		{"go-zero store", func(c middleware.LockConf) (*middleware.LockMiddleware, error) {
			return middleware.NewLockMiddleware(c, newStore(srv))
		}},
		{"go-redis client", func(c middleware.LockConf) (*middleware.LockMiddleware, error) {
			return middleware.NewLockMiddlewareWithBackend(c, redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups()))
		}},
		{"go-zero cluster store", func(c middleware.LockConf) (*middleware.LockMiddleware, error) {
			return middleware.NewLockMiddleware(c, zredis.MustNewRedis(zredis.RedisConf{
				Host: strings.Join(cluster.Addrs(), ","), Type: zredis.ClusterType, NonBlock: true, DisableIdentity: true,
			}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.new(exportsConf(2))
			if err != nil {
				t.Fatal(err)
			}
			e := newExports("alice", "bob")
			get := serveExports(t, m, e)
			acquired, limited := counter(t, exportsRoute, "acquired"), counter(t, exportsRoute, "limited")

			alice := make(chan resttest.Result, 3)
			for i := 0; i < 2; i++ {
				go func() { alice <- get("alice") }()
			}
			wantInside(t, e, "alice")
			wantInside(t, e, "alice")
			// The first permit frees by expiry within Expire, 5s.
			wantOverLimit(t, get("alice"), 5)

			bob := make(chan resttest.Result, 1)
			go func() { bob <- get("bob") }()
			wantInside(t, e, "bob")
			letOut(t, e, "bob")
			if r := <-bob; r.Status != http.StatusOK {
				t.Fatalf("another user while alice is at her limit: %d %s", r.Status, r.Body)
			}

			letOut(t, e, "alice")
			if r := <-alice; r.Status != http.StatusOK {
				t.Fatalf("an admitted export: %d %s", r.Status, r.Body)
			}
			go func() { alice <- get("alice") }()
			wantInside(t, e, "alice") // the freed permit serves a new export
			close(e.release["alice"])
			for i := 0; i < 2; i++ {
				if r := <-alice; r.Status != http.StatusOK {
					t.Fatalf("an admitted export: %d %s", r.Status, r.Body)
				}
			}
			if got := counter(t, exportsRoute, "acquired") - acquired; got != 4 {
				t.Errorf("acquired counted %v times, want 4", got)
			}
			if got := counter(t, exportsRoute, "limited") - limited; got != 1 {
				t.Errorf("limited counted %v times, want 1", got)
			}
		})
	}
	if keys := srv.Client(t).Keys(context.Background(), "zerolock:*").Val(); len(keys) != 0 {
		t.Fatalf("permits left in Redis after every export ended: %v", keys)
	}
}

// TestLimitReleasesOnPanic: a panicking export frees its permit, so the
// next one is served.
func TestLimitReleasesOnPanic(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, exportsConf(1), newStore(srv))
	var panicked atomic.Bool
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodGet, Path: "/exports", Handler: func(w http.ResponseWriter, r *http.Request) {
			if !panicked.Swap(true) {
				panic("export failed")
			}
			w.WriteHeader(http.StatusOK)
		}}})
	if r := resttest.Do(t, http.MethodGet, base+"/exports", "", "X-User-Id", "alice"); r.Status != http.StatusInternalServerError {
		t.Fatalf("panicking export answered %d, want go-zero's 500", r.Status)
	}
	if r := resttest.Do(t, http.MethodGet, base+"/exports", "", "X-User-Id", "alice"); r.Status != http.StatusOK {
		t.Fatalf("after a panic the permit was kept: %d %s", r.Status, r.Body)
	}
	if keys := srv.Client(t).Keys(context.Background(), "zerolock:*").Val(); len(keys) != 0 {
		t.Fatalf("permits left in Redis: %v", keys)
	}
}

// TestLimitReleasesOnTimeout: an export that go-zero's timeout ends (503)
// frees its permit when the handler returns, so a new export is served.
func TestLimitReleasesOnTimeout(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, exportsConf(1), newStore(srv))
	e := newExports("alice") // nobody releases alice: each export runs until its timeout
	get := serveExports(t, m, e, rest.WithTimeout(200*time.Millisecond))
	if r := get("alice"); r.Status != http.StatusServiceUnavailable {
		t.Fatalf("an export past its timeout: %d %s, want go-zero's 503", r.Status, r.Body)
	}
	wantInside(t, e, "alice")
	// The permit is released just after the handler returns, which may be
	// a moment after go-zero answered 503.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := get("alice")
		if r.Status == http.StatusServiceUnavailable { // served, and timed out in turn
			wantInside(t, e, "alice")
			break
		}
		if r.Status != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("after the timed-out export: %d %s, want it served", r.Status, r.Body)
		}
	}
}

// TestLimitRenewKeepsPermit: with Renew, a long export keeps its 300 ms
// permit past its expiry, and its context is not cancelled.
func TestLimitRenewKeepsPermit(t *testing.T) {
	srv := redistest.Start(t)
	c := exportsConf(1)
	c.Expire, c.Renew = 300*time.Millisecond, true
	m := mustMiddleware(t, c, newStore(srv))
	e := newExports("alice")
	get := serveExports(t, m, e)
	first := make(chan resttest.Result, 1)
	go func() { first <- get("alice") }()
	wantInside(t, e, "alice")
	time.Sleep(time.Second) // over three expiries: time must pass for a renewal to matter
	r := get("alice")
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("a second export while a renewed one runs: %d %s, want 429", r.Status, r.Body)
	}
	letOut(t, e, "alice")
	if r := <-first; r.Status != http.StatusOK {
		t.Fatalf("the renewed export: %d %s, want 200 (its context must live)", r.Status, r.Body)
	}
	go func() { first <- get("alice") }()
	wantInside(t, e, "alice")
	letOut(t, e, "alice")
	if r := <-first; r.Status != http.StatusOK {
		t.Fatalf("an export after the renewed one: %d %s", r.Status, r.Body)
	}
}

// Limit mode loads from YAML, Permits on the rule or as the
// configuration's default.
func TestLimitConfLoads(t *testing.T) {
	var c middleware.LockConf
	err := conf.LoadFromYamlBytes([]byte(`
Permits: 3
Rules:
  - Method: GET
    Path: /exports
    Keys: [claim:userId]
    Mode: limit
    Permits: 2
  - Method: GET
    Path: /reports
    Keys: [claim:userId]
    Mode: limit
`), &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Permits != 3 || c.Rules[0].Mode != middleware.ModeLimit || c.Rules[0].Permits != 2 || c.Rules[1].Permits != 0 {
		t.Fatalf("loaded %+v", c)
	}
	if _, err := middleware.NewLockMiddlewareWithBackend(c, redislock.NewBackend(redistest.Start(t).Client(t), redislock.WithoutWakeups())); err != nil {
		t.Fatal(err)
	}
}

// What limit mode cannot do is refused at start-up, by the constructor and
// by ForRule, with an error that says why.
func TestLimitConfigRefused(t *testing.T) {
	limit := func(r middleware.LockRule, change ...func(*middleware.LockConf)) middleware.LockConf {
		r.Method, r.Path, r.Keys = http.MethodGet, "/exports", []string{"header:X-User-Id"}
		return oneRule(r, change...)
	}
	limitMode := middleware.LockRule{Mode: middleware.ModeLimit, Permits: 2}
	redlock := checkConfigCases(t, []configCase{
		{"permits", limit(limitMode), false, ""},
		{"default permits", limit(middleware.LockRule{Mode: middleware.ModeLimit}, func(c *middleware.LockConf) { c.Permits = 2 }), false, ""},
		{"limit mode by default", limit(middleware.LockRule{Permits: 2}, func(c *middleware.LockConf) { c.Mode = middleware.ModeLimit }), false, ""},
		{"renew", limit(limitMode, func(c *middleware.LockConf) { c.Renew = true }), false, ""},
		{"no permits", limit(middleware.LockRule{Mode: middleware.ModeLimit}), false, "limit mode needs Permits of at least 1"},
		{"negative permits", limit(middleware.LockRule{Mode: middleware.ModeLimit, Permits: -1}), false, "Permits -1"},
		{"permits in inflight mode", limit(middleware.LockRule{Permits: 2}), false, "Permits is for limit mode only"},
		{"permits in window mode", limit(middleware.LockRule{Mode: middleware.ModeWindow, Permits: 2}), false, "Permits is for limit mode only"},
		{"fence", limit(limitMode, func(c *middleware.LockConf) { c.Fence = true }), false, "Fence cannot be used in limit mode"},
		{"replay settings", limit(middleware.LockRule{Mode: middleware.ModeLimit, Permits: 2, Retain: time.Hour}), false, "replay mode only"},
		{"redlock", limit(limitMode), true, "use a Redis store backend"},
	})

	m, err := middleware.NewLockMiddlewareWithBackend(middleware.LockConf{}, redlock)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.ForRule(middleware.LockRule{Method: http.MethodGet, Path: "/exports", Keys: []string{"header:X-User-Id"},
		Mode: middleware.ModeLimit, Permits: 2})
	if !errors.Is(err, middleware.ErrBadConfig) || !strings.Contains(err.Error(), "use a Redis store backend") {
		t.Fatalf("ForRule in limit mode on Redlock: %v, want ErrBadConfig naming the fix", err)
	}
}
