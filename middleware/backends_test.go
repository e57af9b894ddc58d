package middleware_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/testing/etcdtest"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/internal/testing/zktest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
	"github.com/zerolock/zerolock/zklock"
)

// lockBackends are the lock services the middleware runs on through
// NewLockMiddlewareWithBackend, each started on a server of its own for
// the test that asks: Redis (a go-redis client), etcd and ZooKeeper.
var lockBackends = []struct {
	name  string
	start func(t *testing.T) zerolock.Backend
}{
	{"redis", func(t *testing.T) zerolock.Backend {
		return redislock.NewBackend(redistest.Start(t).Client(t))
	}},
	{"etcd", func(t *testing.T) zerolock.Backend {
		return etcdlock.NewBackend(etcdtest.Start(t).Client(t))
	}},
	{"zookeeper", func(t *testing.T) zerolock.Backend {
		conn := zktest.Start(t).Connect(t, 20*time.Second)
		t.Cleanup(func() { waitZKLocksGone(t, conn) }) // before the connection closes
		return zklock.NewBackend(conn)
	}},
}

// waitZKLocksGone waits until no lock node is left under zklock's root. A
// window's lock outlives its request, and a zklock Lock ends it with a
// timer of its own, on the Lock's connection: were the connection closed
// first, the timer's delete would fail and retry in the background after
// the test, where goleak sees it.
func waitZKLocksGone(t *testing.T, conn *zk.Conn) {
	t.Helper()
	held := func() int {
		keys, _, err := conn.Children(zklock.DefaultRoot)
		if errors.Is(err, zk.ErrNoNode) {
			return 0
		}
		if err != nil {
			t.Fatalf("children of %s: %v", zklock.DefaultRoot, err)
		}
		n := 0
		for _, key := range keys {
			nodes, _, err := conn.Children(zklock.DefaultRoot + "/" + key)
			if err != nil {
				t.Fatalf("children of %s/%s: %v", zklock.DefaultRoot, key, err)
			}
			n += len(nodes)
		}
		return n
	}
	deadline := time.Now().Add(20 * time.Second)
	for held() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d lock nodes left under %s 20 s after the test", held(), zklock.DefaultRoot)
		}
		time.Sleep(10 * time.Millisecond) // polling ZooKeeper until the timers fired
	}
}

// TestLockBackends runs the anti-double-click middleware on every lock
// backend, in a real go-zero rest.Server: in inflight mode (with Renew and
// Fence, which every backend's locks can do) and in window mode.
func TestLockBackends(t *testing.T) {
	for _, b := range lockBackends {
		t.Run(b.name, func(t *testing.T) {
			backend := b.start(t)
			t.Run("inflight", func(t *testing.T) { inflightOn(t, backend) })
			t.Run("window", func(t *testing.T) { windowOn(t, backend) })
		})
	}
}

// inflightOn: while one request is in its handler, concurrent duplicates
// are refused with 409, Retry-After and the JSON refusal, and another
// order gets in; once it completes the same request passes again, with a
// greater fencing token.
func inflightOn(t *testing.T, backend zerolock.Backend) {
	c := resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "claim:userId", "json:orderId")
	c.Renew, c.Fence = true, true
	m, err := middleware.NewLockMiddlewareWithBackend(c, backend)
	if err != nil {
		t.Fatal(err)
	}
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}}, rest.WithJwt(jwtSecret))
	auth := "Bearer " + resttest.Token(t, jwtSecret, 7)
	order := func(id string) resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"`+id+`"}`, "Authorization", auth)
	}

	first := make(chan resttest.Result, 1)
	go func() { first <- order("B-1") }()
	fence := <-g.Inside
	if fence <= 0 {
		t.Fatalf("handler's fencing token %d, want the backend's token", fence)
	}
	const n = 5
	results := make(chan resttest.Result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- order("B-1")
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		dup := <-results
		if dup.Status != http.StatusConflict {
			t.Fatalf("duplicate in flight: %d %s, want 409", dup.Status, dup.Body)
		}
		var body struct{ Code, Message string }
		if err := json.Unmarshal([]byte(dup.Body), &body); err != nil || body.Code != "duplicate_request" {
			t.Fatalf("409 body %q is not the JSON refusal", dup.Body)
		}
		if secs, err := strconv.Atoi(dup.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 5 {
			t.Fatalf("Retry-After = %q, want 1..5 seconds (the holder's time left, or Expire)", dup.Header.Get("Retry-After"))
		}
	}
	other := make(chan resttest.Result, 1)
	go func() { other <- order("B-2") }()
	<-g.Inside // another order gets in while B-1 is in flight
	g.Release <- struct{}{}
	g.Release <- struct{}{}
	if r := <-first; r.Status != http.StatusOK || !strings.Contains(r.Body, "B-1") {
		t.Fatalf("the admitted request: %d %s", r.Status, r.Body)
	}
	if r := <-other; r.Status != http.StatusOK {
		t.Fatalf("another order while B-1 was in flight: %d, want 200", r.Status)
	}

	again := make(chan resttest.Result, 1)
	go func() { again <- order("B-1") }()
	if next := <-g.Inside; next <= fence {
		t.Fatalf("fencing token of the next request %d, want > %d", next, fence)
	}
	g.Release <- struct{}{}
	if r := <-again; r.Status != http.StatusOK {
		t.Fatalf("the same request after the first completed: %d %s, want 200", r.Status, r.Body)
	}
}

// windowOn: in window mode the lock outlives the handler and expires by
// itself, so a repeat is refused until the lock's expiry passes.
func windowOn(t *testing.T, backend zerolock.Backend) {
	c := resttest.OrdersConf(middleware.ModeWindow, time.Second, "json:orderId")
	m, err := middleware.NewLockMiddlewareWithBackend(c, backend)
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
			t.Fatalf("repeat after the window: %d %s, want 200 once the lock expired", r.Status, r.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := g.Entered.Load(); n != 2 {
		t.Fatalf("%d requests reached the handler, want 2", n)
	}
}
