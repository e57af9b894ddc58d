package zklock_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
	"github.com/zerolock/zerolock/zklock"
)

// TestMiddleware runs the REST middleware on ZooKeeper locks in a real
// go-zero server: while one request is in its handler, duplicates are
// refused with 409 and a JSON body; once it completes, the same request
// passes again. Renew and Fence work, since Locks can Watch and Fence.
func TestMiddleware(t *testing.T) {
	c := ordersConf(middleware.ModeInflight, 5*time.Second)
	c.Renew, c.Fence = true, true
	m, err := middleware.NewLockMiddlewareWithBackend(c, zklock.NewBackend(connect(t), testRoot(t)))
	if err != nil {
		t.Fatal(err)
	}
	g := newGate()
	base := serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.handler}}, rest.WithJwt(jwtSecret))
	auth := "Bearer " + token(t, 7)
	order := func() result {
		return do(t, http.MethodPost, base+"/orders", `{"orderId":"Z-1"}`, "Authorization", auth)
	}

	first := make(chan result, 1)
	go func() { first <- order() }()
	<-g.inside
	const n = 5
	results := make(chan result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- order()
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		r := <-results
		if r.status != http.StatusConflict {
			t.Fatalf("duplicate: %d %s, want 409", r.status, r.body)
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(r.body), &body); err != nil {
			t.Fatalf("409 body %q is not JSON: %v", r.body, err)
		}
	}
	g.release <- struct{}{}
	if r := <-first; r.status != http.StatusOK {
		t.Fatalf("admitted request: %d %s", r.status, r.body)
	}
	if f := <-g.fences; f <= 0 {
		t.Fatalf("handler saw fence %d, want a token", f)
	}

	again := make(chan result, 1)
	go func() { again <- order() }()
	<-g.inside
	g.release <- struct{}{}
	if r := <-again; r.status != http.StatusOK {
		t.Fatalf("request after the first completed: %d %s", r.status, r.body)
	}
}

const jwtSecret = "zerolock-test-secret"

// orderReq is what the order handler parses.
type orderReq struct {
	OrderID string `json:"orderId"`
}

// gate holds each request in the handler until released, and records the
// fencing token the handler saw.
type gate struct {
	inside  chan struct{}
	release chan struct{}
	fences  chan int64
}

func newGate() *gate {
	return &gate{inside: make(chan struct{}, 10), release: make(chan struct{}), fences: make(chan int64, 10)}
}

func (g *gate) handler(w http.ResponseWriter, r *http.Request) {
	var req orderReq
	if err := httpx.Parse(r, &req); err != nil {
		httpx.ErrorCtx(r.Context(), w, err)
		return
	}
	fence, _ := redislock.FenceFromContext(r.Context())
	g.fences <- fence
	g.inside <- struct{}{}
	<-g.release
	httpx.WriteJsonCtx(r.Context(), w, http.StatusOK, map[string]string{"orderId": req.OrderID})
}

func ordersConf(mode string, expire time.Duration) middleware.LockConf {
	return middleware.LockConf{
		Expire: expire,
		Mode:   mode,
		Rules: []middleware.LockRule{{
			Method: http.MethodPost, Path: "/orders", Keys: []string{"claim:userId", "json:orderId"},
		}},
	}
}

// serve runs a real go-zero rest.Server on a free loopback port with the
// middleware installed by install, until the test ends, and returns its
// base URL (from middleware's tests).
func serve(t *testing.T, install func(s *rest.Server), routes []rest.Route, opts ...rest.RouteOption) string {
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
	logx.Disable() // MustNewServer set logging up again
	install(server)
	server.AddRoutes(routes, opts...)
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
	t.Fatal("server did not start")
	return ""
}

// token signs a go-zero style JWT carrying userId.
func token(t *testing.T, userID any) string {
	t.Helper()
	claims := jwt.MapClaims{"userId": userID, "exp": time.Now().Add(time.Hour).Unix()}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(jwtSecret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// result is one answered request.
type result struct {
	status int
	body   string
}

// do sends a request and reads the whole answer.
func do(t *testing.T, method, url, body string, headers ...string) result {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return result{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, body: string(b)}
}
