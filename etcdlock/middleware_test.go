package etcdlock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/etcdlock"
	"github.com/zerolock/zerolock/internal/etcdtest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// TestMiddlewareOnEtcd runs the anti-double-click middleware on etcd locks
// in a real go-zero rest.Server: a duplicate of a request in flight is
// refused with 409 and the JSON refusal, and passes once the first is done.
func TestMiddlewareOnEtcd(t *testing.T) {
	srv := etcdtest.Shared(t)
	c := ordersConf(middleware.ModeInflight, 5*time.Second)
	c.Prefix = testKey(t)
	c.Renew, c.Fence = true, true // etcd locks can renew and fence
	m, err := middleware.NewLockMiddlewareWithBackend(c, etcdlock.NewBackend(srv.Client(t)))
	if err != nil {
		t.Fatal(err)
	}
	g := newGate()
	base := serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.handler}})

	first := make(chan result, 1)
	go func() { first <- post(t, base+"/orders", `{"orderId":"E-1"}`) }()
	fence := <-g.inside
	if fence <= 0 {
		t.Fatalf("handler's fencing token %d, want the etcd revision", fence)
	}
	dup := post(t, base+"/orders", `{"orderId":"E-1"}`)
	if dup.status != http.StatusConflict {
		t.Fatalf("duplicate in flight: %d %s, want 409", dup.status, dup.body)
	}
	var body struct{ Code, Message string }
	if err := json.Unmarshal([]byte(dup.body), &body); err != nil || body.Code != "duplicate_request" {
		t.Fatalf("409 body %q is not the JSON refusal", dup.body)
	}
	if secs, err := strconv.Atoi(dup.header.Get("Retry-After")); err != nil || secs < 1 || secs > 5 {
		t.Fatalf("Retry-After = %q, want 1..5 seconds (the holder's lease)", dup.header.Get("Retry-After"))
	}
	other := make(chan result, 1)
	go func() { other <- post(t, base+"/orders", `{"orderId":"E-2"}`) }()
	<-g.inside // another order gets in while E-1 is in flight
	g.release <- struct{}{}
	g.release <- struct{}{}
	if r := <-first; r.status != http.StatusOK || !strings.Contains(r.body, "E-1") {
		t.Fatalf("the admitted request: %d %s", r.status, r.body)
	}
	if r := <-other; r.status != http.StatusOK {
		t.Fatalf("another order while E-1 was in flight: %d, want 200", r.status)
	}

	again := make(chan result, 1)
	go func() { again <- post(t, base+"/orders", `{"orderId":"E-1"}`) }()
	if next := <-g.inside; next <= fence {
		t.Fatalf("fencing token of the next request %d, want > %d", next, fence)
	}
	g.release <- struct{}{}
	if r := <-again; r.status != http.StatusOK {
		t.Fatalf("the same request after the first completed: %d %s, want 200", r.status, r.body)
	}
}

// TestMiddlewareWindowOnEtcd: in window mode the lock outlives the handler
// and expires by itself, so a repeat is refused until the lease ends.
func TestMiddlewareWindowOnEtcd(t *testing.T) {
	srv := etcdtest.Shared(t)
	c := ordersConf(middleware.ModeWindow, time.Second)
	c.Prefix = testKey(t)
	m, err := middleware.NewLockMiddlewareWithBackend(c, etcdlock.NewBackend(srv.Client(t)))
	if err != nil {
		t.Fatal(err)
	}
	g := newGate()
	close(g.release) // handlers return at once
	base := serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.handler}})

	if r := post(t, base+"/orders", `{"orderId":"W-1"}`); r.status != http.StatusOK {
		t.Fatalf("first request: %d, want 200", r.status)
	}
	if r := post(t, base+"/orders", `{"orderId":"W-1"}`); r.status != http.StatusConflict {
		t.Fatalf("repeat within the window: %d, want 409", r.status)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		r := post(t, base+"/orders", `{"orderId":"W-1"}`)
		if r.status == http.StatusOK {
			break
		}
		if r.status != http.StatusConflict || time.Now().After(deadline) {
			t.Fatalf("repeat after the window: %d %s, want 200 once the lease expired", r.status, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := g.entered.Load(); n != 2 {
		t.Fatalf("%d requests reached the handler, want 2", n)
	}
}

// The helpers below are copied from middleware's tests, which cannot be
// imported.

// orderReq is what the order handler parses.
type orderReq struct {
	OrderID string `json:"orderId"`
}

// gate is a handler that counts entries, tells each entry's fencing token
// on inside and holds it until release.
type gate struct {
	entered atomic.Int32
	inside  chan int64
	release chan struct{}
}

func newGate() *gate {
	return &gate{inside: make(chan int64, 100), release: make(chan struct{})}
}

func (g *gate) handler(w http.ResponseWriter, r *http.Request) {
	var req orderReq
	if err := httpx.Parse(r, &req); err != nil {
		httpx.ErrorCtx(r.Context(), w, err)
		return
	}
	g.entered.Add(1)
	fence, _ := redislock.FenceFromContext(r.Context())
	g.inside <- fence
	<-g.release
	httpx.OkJsonCtx(r.Context(), w, map[string]string{"orderId": req.OrderID})
}

func ordersConf(mode string, expire time.Duration) middleware.LockConf {
	return middleware.LockConf{
		Expire: expire,
		Mode:   mode,
		Rules: []middleware.LockRule{{
			Method: http.MethodPost, Path: "/orders", Keys: []string{"json:orderId"},
		}},
	}
}

// serve runs a real go-zero rest.Server on a free loopback port with the
// middleware installed by install, until the test ends, and returns its
// base URL.
func serve(t *testing.T, install func(s *rest.Server), routes []rest.Route) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()

	var c rest.RestConf
	if err := conf.FillDefault(&c); err != nil {
		t.Fatal(err)
	}
	c.Name, c.Host, c.Port = "zerolock-test", "127.0.0.1", port
	c.DevServer.Enabled = false // its HTTP server is never stopped
	server := rest.MustNewServer(c)
	install(server)
	server.AddRoutes(routes)
	started := make(chan *http.Server, 1)
	go server.StartWithOpts(func(s *http.Server) { started <- s })
	hs := <-started
	t.Cleanup(func() { _ = hs.Shutdown(context.Background()) })

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if conn, err := net.Dial("tcp", l.Addr().String()); err == nil {
			conn.Close()
			return base
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("rest server on %s did not start", base)
	return ""
}

// result is one answered request.
type result struct {
	status int
	header http.Header
	body   string
}

// post sends a JSON POST and reads the whole answer.
func post(t *testing.T, url, body string) result {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return result{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b)}
}
