package middleware_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// A replay rule none of whose keys names the caller (a claim, or the
// Authorization header) is refused at start-up: Bob could send the key of
// Alice's payment and be handed her stored response. The error names the
// fix, claim:userId, and the opt-out, SharedKeys.
func TestReplayRefusesKeysWithoutCaller(t *testing.T) {
	store := newStore(redistest.Start(t))
	for _, tc := range []struct {
		keys     []string
		accepted bool
	}{
		{[]string{"header:Idempotency-Key"}, false},
		{[]string{"header:Idempotency-Key", "ip"}, false},
		{[]string{"header:Idempotency-Key", "header:X-User-Id"}, false},
		{[]string{"json:userId", "path:id", "query:k", "form:k", "body"}, false},
		{[]string{"claim:userId", "header:Idempotency-Key"}, true},
		{[]string{"claim:tenant", "json:orderId"}, true},
		{[]string{"header:Authorization", "header:Idempotency-Key"}, true},
		{[]string{"header:authorization", "header:Idempotency-Key"}, true},
	} {
		t.Run(strings.Join(tc.keys, ","), func(t *testing.T) {
			rule := middleware.LockRule{Method: http.MethodPost, Path: "/payments/:id", Keys: tc.keys}
			byRule := middleware.LockConf{Rules: []middleware.LockRule{rule}}
			byRule.Rules[0].Mode = middleware.ModeReplay
			byConf := middleware.LockConf{Mode: middleware.ModeReplay, Rules: []middleware.LockRule{rule}}
			for name, c := range map[string]middleware.LockConf{"rule": byRule, "conf": byConf} {
				_, err := middleware.NewLockMiddleware(c, store)
				if tc.accepted {
					if err != nil {
						t.Fatalf("replay by the %s: %v", name, err)
					}
					continue
				}
				if !errors.Is(err, middleware.ErrBadConfig) {
					t.Fatalf("replay by the %s: %v, want ErrBadConfig", name, err)
				}
				for _, fix := range []string{"names the caller", "claim:userId", "header:Authorization", "SharedKeys: true"} {
					if !strings.Contains(err.Error(), fix) {
						t.Errorf("replay by the %s: %q does not name %q", name, err, fix)
					}
				}
			}
		})
	}
	m := mustMiddleware(t, middleware.LockConf{}, store)
	_, err := m.ForRule(middleware.LockRule{Method: http.MethodPost, Path: "/payments", Mode: middleware.ModeReplay,
		Keys: []string{"header:Idempotency-Key"}})
	if !errors.Is(err, middleware.ErrBadConfig) || !strings.Contains(err.Error(), "SharedKeys") {
		t.Fatalf("ForRule: %v, want ErrBadConfig naming SharedKeys", err)
	}
}

// servePaymentsByUser serves POST /pay behind go-zero's JWT and a lock
// middleware for c, with a handler that answers 201 and the payment it
// made for the user of the token: {"user": "alice", "paymentId": "pay-1"}.
// runs counts the handler's runs.
func servePaymentsByUser(t *testing.T, c middleware.LockConf, runs *atomic.Int32) string {
	t.Helper()
	m := mustMiddleware(t, c, newStore(redistest.Start(t)))
	return resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
		Method: http.MethodPost, Path: "/pay", Handler: func(w http.ResponseWriter, r *http.Request) {
			n := runs.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(map[string]any{
				"user": r.Context().Value("userId"), "paymentId": fmt.Sprintf("pay-%d", n)})
		},
	}}, rest.WithJwt(jwtSecret))
}

// paidBy fails the test unless r is a payment made for user, not a replay.
func paidBy(t *testing.T, r resttest.Result, user string) {
	t.Helper()
	var body struct{ User string }
	_ = json.Unmarshal([]byte(r.Body), &body)
	if r.Status != http.StatusCreated || body.User != user || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("%d %s (replayed %q), want a payment of %s's own", r.Status, r.Body, r.Header.Get("Idempotent-Replayed"), user)
	}
}

// With the caller in the key, a stored response is only ever replayed to
// the caller that made the first request: Bob, sending the key and body
// of Alice's payment, gets a payment of his own, never Alice's response,
// and Alice's retry still gets hers replayed.
func TestReplayKeyIsPerCaller(t *testing.T) {
	var runs atomic.Int32
	base := servePaymentsByUser(t, replayConf("/pay", "claim:userId", "header:Idempotency-Key"), &runs)
	const key, body = "k-shared-by-chance", `{"amount":500}`

	alice := payAs(t, base+"/pay", "alice", key, body)
	paidBy(t, alice, "alice")
	bob := payAs(t, base+"/pay", "bob", key, body)
	paidBy(t, bob, "bob")
	if bob.Body == alice.Body {
		t.Fatalf("Bob got Alice's response %s", alice.Body)
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want twice: once for Alice, once for Bob", n)
	}
	for user, first := range map[string]resttest.Result{"alice": alice, "bob": bob} {
		r := payAs(t, base+"/pay", user, key, body)
		if r.Status != first.Status || r.Body != first.Body || r.Header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("%s's retry: %d %s (replayed %q), want %s's own response replayed: %s",
				user, r.Status, r.Body, r.Header.Get("Idempotent-Replayed"), user, first.Body)
		}
	}
	if n := runs.Load(); n != 2 {
		t.Fatalf("the handler ran %d times after the retries, want twice", n)
	}
}

// SharedKeys, on the rule or the configuration, accepts a replay rule
// keyed on the idempotency key alone, for an endpoint whose keys are shared
// by different callers on purpose: a response stored for one caller is
// then replayed to any caller who sends its key.
func TestReplaySharedKeys(t *testing.T) {
	shared := replayConf("/pay", "header:Idempotency-Key")
	shared.Rules[0].SharedKeys = true
	byConf := replayConf("/pay", "header:Idempotency-Key")
	byConf.SharedKeys = true
	for name, c := range map[string]middleware.LockConf{"rule": shared, "conf": byConf} {
		t.Run(name, func(t *testing.T) {
			var runs atomic.Int32
			base := servePaymentsByUser(t, c, &runs)
			alice := payAs(t, base+"/pay", "alice", "k-shared", `{"amount":500}`)
			paidBy(t, alice, "alice")
			bob := payAs(t, base+"/pay", "bob", "k-shared", `{"amount":500}`)
			if bob.Status != alice.Status || bob.Body != alice.Body || bob.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("Bob under a shared key: %d %s (replayed %q), want Alice's response replayed",
					bob.Status, bob.Body, bob.Header.Get("Idempotent-Replayed"))
			}
			if n := runs.Load(); n != 1 {
				t.Fatalf("the handler ran %d times, want once", n)
			}
		})
	}
}
