package middleware_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// Replay's settings load from YAML with their defaults, per rule too.
func TestReplayConfLoads(t *testing.T) {
	var c middleware.LockConf
	err := conf.LoadFromYamlBytes([]byte(`
Mode: replay
Rules:
  - Method: POST
    Path: /payments
    Keys: [claim:userId, header:Idempotency-Key]
  - Method: POST
    Path: /refunds
    Keys: [header:Idempotency-Key]
    SharedKeys: true
    Mode: replay
    Retain: 1h
    MaxResponseBytes: 4096
    Fingerprint: [json:amount, query:currency]
  - Method: POST
    Path: /orders
    Keys: [header:X-User]
    Mode: window
`), &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != middleware.ModeReplay || c.Retain != 24*time.Hour || c.MaxResponseBytes != 1<<20 {
		t.Fatalf("defaults: Mode %q, Retain %v, MaxResponseBytes %d; want replay, 24h, 1048576", c.Mode, c.Retain, c.MaxResponseBytes)
	}
	r := c.Rules[1]
	if r.Mode != middleware.ModeReplay || r.Retain != time.Hour || r.MaxResponseBytes != 4096 ||
		strings.Join(r.Fingerprint, ",") != "json:amount,query:currency" || !r.SharedKeys {
		t.Fatalf("rule overrides: %+v", r)
	}
	if _, err := middleware.NewLockMiddlewareWithBackend(c, redislock.NewBackend(redistest.Start(t).Client(t), redislock.WithoutWakeups())); err != nil {
		t.Fatal(err)
	}
	if err := conf.LoadFromYamlBytes([]byte("Mode: replays\n"), &c); err == nil {
		t.Fatal("an unknown mode loaded")
	}
}

// What replay mode cannot do is refused at start-up, with an error that
// says why.
func TestReplayConfigRefused(t *testing.T) {
	client := redistest.Start(t).Client(t)
	rule := func(r middleware.LockRule) middleware.LockConf {
		r.Method, r.Path = http.MethodPost, "/pay/:id"
		if r.Keys == nil {
			r.Keys = payKeys
		}
		return middleware.LockConf{Mode: middleware.ModeReplay, Rules: []middleware.LockRule{r}}
	}
	fenced := rule(middleware.LockRule{})
	fenced.Fence = true
	renewed := rule(middleware.LockRule{})
	renewed.Renew = true
	for _, tc := range []struct {
		name string
		c    middleware.LockConf
		why  string // "" when accepted
	}{
		{"fence", fenced, "Fence cannot be used in replay mode"},
		{"renew", renewed, ""},
		{"bad fingerprint source", rule(middleware.LockRule{Fingerprint: []string{"cookie:x"}}), "Fingerprint"},
		{"bad fingerprint path", rule(middleware.LockRule{Fingerprint: []string{"json:a..b"}}), "Fingerprint"},
		{"fingerprint names no path variable", rule(middleware.LockRule{Fingerprint: []string{"path:account"}}), "Fingerprint"},
		{"fingerprint", rule(middleware.LockRule{Fingerprint: []string{"path:id", "json:amount"}}), ""},
		{"fingerprint outside replay", rule(middleware.LockRule{Mode: middleware.ModeInflight, Fingerprint: []string{"json:amount"}}), "replay mode only"},
		{"retain outside replay", rule(middleware.LockRule{Mode: middleware.ModeWindow, Retain: time.Hour}), "replay mode only"},
		{"retain under 1ms", rule(middleware.LockRule{Retain: time.Microsecond}), "Retain"},
		{"negative max response", rule(middleware.LockRule{MaxResponseBytes: -1}), "MaxResponseBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := middleware.NewLockMiddlewareWithBackend(tc.c, redislock.NewBackend(client, redislock.WithoutWakeups()))
			switch {
			case tc.why == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.why != "" && (!errors.Is(err, middleware.ErrBadConfig) || !strings.Contains(err.Error(), tc.why)):
				t.Fatalf("got %v, want ErrBadConfig saying %q", err, tc.why)
			}
		})
	}
}

// A backend whose locks cannot keep a result in their place (Redlock) is
// refused for replay mode, by the constructor and by ForRule.
func TestReplayRefusesRedlock(t *testing.T) {
	var stores []redislock.Store
	for i := 0; i < 3; i++ {
		stores = append(stores, redistest.Start(t).Client(t))
	}
	backend := redislock.NewRedLockBackend(stores)
	_, err := middleware.NewLockMiddlewareWithBackend(replayConf("/pay", payKeys...), backend)
	if !errors.Is(err, middleware.ErrBadConfig) || !strings.Contains(err.Error(), "replay mode needs a lock backend that can store a result") {
		t.Fatalf("replay on Redlock: %v, want ErrBadConfig naming why", err)
	}
	t.Log(err)

	m, err := middleware.NewLockMiddlewareWithBackend(middleware.LockConf{}, backend)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.ForRule(middleware.LockRule{Method: http.MethodPost, Path: "/pay", Keys: payKeys, Mode: middleware.ModeReplay})
	if !errors.Is(err, middleware.ErrBadConfig) || !strings.Contains(err.Error(), "replay mode") {
		t.Fatalf("ForRule in replay mode on Redlock: %v, want ErrBadConfig", err)
	}
}
