package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// slowExpire is the rules' expiry in the slow-handler tests: the handler
// outlives it several times over.
const slowExpire = 300 * time.Millisecond

// TestSlowHandlerRunsOnceByDefault: with a configuration that sets nothing
// but Expire, a handler that runs three expiries long (a payment gateway
// slower than the lock) keeps its key in every mode, behind go-zero's JWT:
// a retry sent while it runs is refused (409, or 429 in limit mode), never
// run beside it. Once it returns: replay mode hands the retry the first
// response; window mode keeps refusing for Expire after the handler
// returned; inflight and limit modes run the next request. Before renewal
// became the default, the lock expired under the handler and the retry
// ran a second payment.
func TestSlowHandlerRunsOnceByDefault(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		refused   int
		afterward int  // the retry right after the first returned
		runsAgain bool // and it ran the handler
	}{
		{middleware.ModeInflight, http.StatusConflict, http.StatusCreated, true},
		{middleware.ModeWindow, http.StatusConflict, http.StatusConflict, false},
		{middleware.ModeReplay, http.StatusConflict, http.StatusCreated, false},
		{middleware.ModeLimit, http.StatusTooManyRequests, http.StatusCreated, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			srv := redistest.Start(t)
			rule := middleware.LockRule{Method: http.MethodPost, Path: "/pay", Keys: []string{"claim:userId", "json:orderId"}}
			if tc.mode == middleware.ModeLimit {
				rule.Permits = 1
			}
			m := mustMiddleware(t, middleware.LockConf{Expire: slowExpire, Mode: tc.mode,
				Rules: []middleware.LockRule{rule}}, newStore(srv))
			var payments atomic.Int32
			entered := make(chan struct{}, 10)
			finish := make(chan struct{})
			base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
				Method: http.MethodPost, Path: "/pay", Handler: func(w http.ResponseWriter, r *http.Request) {
					id := payments.Add(1)
					entered <- struct{}{}
					<-finish
					if err := context.Cause(r.Context()); err != nil {
						t.Errorf("payment %d: the handler's context ended while it held its key: %v", id, err)
					}
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusCreated)
					fmt.Fprintf(w, `{"paymentId":%d}`, id)
				},
			}}, rest.WithJwt(jwtSecret))
			token := "Bearer " + resttest.Token(t, jwtSecret, "alice")
			pay := func() resttest.Result {
				return resttest.Do(t, http.MethodPost, base+"/pay", `{"orderId":"o-1"}`, "Authorization", token)
			}

			first := make(chan resttest.Result, 1)
			go func() { first <- pay() }()
			<-entered
			time.Sleep(3 * slowExpire) // the handler outlives its expiry: only renewal keeps the key
			if r := pay(); r.Status != tc.refused {
				t.Fatalf("a retry while the first runs, past its expiry: %d %s, want %d", r.Status, r.Body, tc.refused)
			}
			close(finish)
			r := <-first
			if r.Status != http.StatusCreated || r.Body != `{"paymentId":1}` {
				t.Fatalf("the first payment: %d %s", r.Status, r.Body)
			}
			after := pay()
			if after.Status != tc.afterward {
				t.Fatalf("the retry after the first returned: %d %s, want %d", after.Status, after.Body, tc.afterward)
			}
			want := int32(1)
			if tc.runsAgain {
				want = 2 // inflight and limit modes run a later request again
			}
			if tc.mode == middleware.ModeReplay && (after.Body != r.Body || after.Header.Get("Idempotent-Replayed") != "true") {
				t.Fatalf("replayed %q (Idempotent-Replayed %q), want the first response %q",
					after.Body, after.Header.Get("Idempotent-Replayed"), r.Body)
			}
			if got := payments.Load(); got != want {
				t.Fatalf("the handler ran %d times, want %d", got, want)
			}
		})
	}
}

// TestMaxHoldBoundsRenewal: a handler that hangs past MaxHold has its
// context cancelled with zerolock.ErrMaxHold, renewal stops, the hold ends
// at its expiry (a duplicate then runs), and the end is logged and counted
// in zerolock_http_holds_lost_total{cause="max_hold"}.
func TestMaxHoldBoundsRenewal(t *testing.T) {
	srv := redistest.Start(t)
	const route = "POST /hang"
	m := mustMiddleware(t, middleware.LockConf{Expire: 200 * time.Millisecond, MaxHold: 500 * time.Millisecond,
		Rules: []middleware.LockRule{{Method: http.MethodPost, Path: "/hang", Keys: []string{"header:X-User"}}}}, newStore(srv))
	causes := make(chan error, 1)
	finish := make(chan struct{})
	defer close(finish)
	before := lostCount(t, route, "max_hold")
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
		Method: http.MethodPost, Path: "/hang", Handler: func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("X-Second") != "" {
				httpx.OkJsonCtx(r.Context(), w, "second")
				return
			}
			start := time.Now()
			<-r.Context().Done()
			if held := time.Since(start); held < 400*time.Millisecond {
				t.Errorf("the handler's context ended after %v, before MaxHold", held)
			}
			causes <- context.Cause(r.Context())
			<-finish // hung: it never returns while the test runs
		},
	}})
	go resttest.Do(t, http.MethodPost, base+"/hang", "", "X-User", "u")
	if cause := <-causes; !errors.Is(cause, zerolock.ErrMaxHold) {
		t.Fatalf("the hung handler's context cause = %v, want ErrMaxHold", cause)
	}
	if got := lostCount(t, route, "max_hold") - before; got != 1 {
		t.Fatalf("holds_lost_total{cause=max_hold} grew by %v, want 1", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := resttest.Do(t, http.MethodPost, base+"/hang", "", "X-User", "u", "X-Second", "1")
		if r.Status == http.StatusOK {
			break
		}
		if r.Status != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("a duplicate after MaxHold: %d %s, want 409 until the hold expires, then 200", r.Status, r.Body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lostCount reads zerolock_http_holds_lost_total for route and cause.
func lostCount(t *testing.T, route, cause string) float64 {
	t.Helper()
	families, err := prom.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "zerolock_http_holds_lost_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] == route && labels["cause"] == cause {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestRenewSettings: renewal's settings are checked at start-up, with the
// fix named; Renew (the old opt-in) is still accepted, now in window mode
// too.
func TestRenewSettings(t *testing.T) {
	srv := redistest.Start(t)
	store := newStore(srv)
	rule := func(r middleware.LockRule) []middleware.LockRule {
		r.Method, r.Path, r.Keys = http.MethodPost, "/a", []string{"header:X-User"}
		return []middleware.LockRule{r}
	}
	for _, tc := range []struct {
		name    string
		c       middleware.LockConf
		mention string // "" when accepted
	}{
		{"Renew in window mode", middleware.LockConf{Renew: true, Mode: middleware.ModeWindow, Rules: rule(middleware.LockRule{})}, ""},
		{"DisableRenew", middleware.LockConf{DisableRenew: true, Rules: rule(middleware.LockRule{})}, ""},
		{"a rule's DisableRenew", middleware.LockConf{Rules: rule(middleware.LockRule{DisableRenew: true})}, ""},
		{"a rule's MaxHold", middleware.LockConf{Rules: rule(middleware.LockRule{MaxHold: time.Minute})}, ""},
		{"Renew and DisableRenew", middleware.LockConf{Renew: true, DisableRenew: true, Rules: rule(middleware.LockRule{})},
			"remove Renew"},
		{"MaxHold under Expire", middleware.LockConf{Expire: 10 * time.Second, MaxHold: 5 * time.Second, Rules: rule(middleware.LockRule{})},
			"raise MaxHold"},
		{"a rule's MaxHold under its Expire", middleware.LockConf{Rules: rule(middleware.LockRule{Expire: time.Minute, MaxHold: 30 * time.Second})},
			"raise MaxHold"},
		{"MaxHold without renewal", middleware.LockConf{Rules: rule(middleware.LockRule{DisableRenew: true, MaxHold: time.Minute})},
			"remove one of them"},
		{"negative MaxHold", middleware.LockConf{MaxHold: -time.Second, Rules: rule(middleware.LockRule{})}, "must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := middleware.NewLockMiddleware(tc.c, store)
			switch {
			case tc.mention == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.mention != "" && (!errors.Is(err, middleware.ErrBadConfig) || !strings.Contains(err.Error(), tc.mention)):
				t.Fatalf("err = %v, want ErrBadConfig mentioning %q", err, tc.mention)
			}
		})
	}
}
