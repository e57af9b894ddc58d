package etcdlock_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// TestMiddlewareOnEtcd runs the anti-double-click middleware on etcd locks
// in a real go-zero rest.Server: a duplicate of a request in flight is
// refused with 409 and the JSON refusal, and passes once the first is done.
func TestMiddlewareOnEtcd(t *testing.T) {
	srv := etcdtest.Shared(t)
	c := resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "json:orderId")
	c.Prefix = testKey(t)
	c.Renew, c.Fence = true, true // etcd locks can renew and fence
	m, err := middleware.NewLockMiddlewareWithBackend(c, etcdlock.NewBackend(srv.Client(t)))
	if err != nil {
		t.Fatal(err)
	}
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}})

	first := make(chan resttest.Result, 1)
	go func() { first <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"E-1"}`) }()
	fence := <-g.Inside
	if fence <= 0 {
		t.Fatalf("handler's fencing token %d, want the etcd revision", fence)
	}
	dup := resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"E-1"}`)
	if dup.Status != http.StatusConflict {
		t.Fatalf("duplicate in flight: %d %s, want 409", dup.Status, dup.Body)
	}
	var body struct{ Code, Message string }
	if err := json.Unmarshal([]byte(dup.Body), &body); err != nil || body.Code != "duplicate_request" {
		t.Fatalf("409 body %q is not the JSON refusal", dup.Body)
	}
	if secs, err := strconv.Atoi(dup.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 5 {
		t.Fatalf("Retry-After = %q, want 1..5 seconds (the holder's lease)", dup.Header.Get("Retry-After"))
	}
	other := make(chan resttest.Result, 1)
	go func() { other <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"E-2"}`) }()
	<-g.Inside // another order gets in while E-1 is in flight
	g.Release <- struct{}{}
	g.Release <- struct{}{}
	if r := <-first; r.Status != http.StatusOK || !strings.Contains(r.Body, "E-1") {
		t.Fatalf("the admitted request: %d %s", r.Status, r.Body)
	}
	if r := <-other; r.Status != http.StatusOK {
		t.Fatalf("another order while E-1 was in flight: %d, want 200", r.Status)
	}

	again := make(chan resttest.Result, 1)
	go func() { again <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"E-1"}`) }()
	if next := <-g.Inside; next <= fence {
		t.Fatalf("fencing token of the next request %d, want > %d", next, fence)
	}
	g.Release <- struct{}{}
	if r := <-again; r.Status != http.StatusOK {
		t.Fatalf("the same request after the first completed: %d %s, want 200", r.Status, r.Body)
	}
}

// TestMiddlewareWindowOnEtcd: in window mode the lock outlives the handler
// and expires by itself, so a repeat is refused until the lease ends.
func TestMiddlewareWindowOnEtcd(t *testing.T) {
	srv := etcdtest.Shared(t)
	c := resttest.OrdersConf(middleware.ModeWindow, time.Second, "json:orderId")
	c.Prefix = testKey(t)
	m, err := middleware.NewLockMiddlewareWithBackend(c, etcdlock.NewBackend(srv.Client(t)))
	if err != nil {
		t.Fatal(err)
	}
	g := resttest.NewGate()
	close(g.Release) // handlers return at once
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}})

	if r := resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"W-1"}`); r.Status != http.StatusOK {
		t.Fatalf("first request: %d, want 200", r.Status)
	}
	if r := resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"W-1"}`); r.Status != http.StatusConflict {
		t.Fatalf("repeat within the window: %d, want 409", r.Status)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"W-1"}`)
		if r.Status == http.StatusOK {
			break
		}
		if r.Status != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("repeat after the window: %d %s, want 200 once the lease expired", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := g.Entered.Load(); n != 2 {
		t.Fatalf("%d requests reached the handler, want 2", n)
	}
}
