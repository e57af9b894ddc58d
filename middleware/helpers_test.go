package middleware_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/prometheus"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/redistest"
	"github.com/zerolock/zerolock/middleware"
)

const jwtSecret = "zerolock-test-secret"

func TestMain(m *testing.M) {
	prometheus.Enable() // go-zero records metrics only when Prometheus is on
	redistest.Quiet()
	redistest.Main(m)
}

// newStore returns go-zero's store for srv (see redislock's tests for why
// DisableIdentity).
func newStore(srv *redistest.Server) *zredis.Redis {
	return zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	})
}

// serve runs a real go-zero rest.Server on a free loopback port with the
// middleware installed by install, until the test ends, and returns its
// base URL.
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
	header http.Header
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
	return send(t, req)
}

func send(t *testing.T, req *http.Request) result {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return result{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func mustMiddleware(t *testing.T, c middleware.LockConf, store *zredis.Redis) *middleware.LockMiddleware {
	t.Helper()
	m, err := middleware.NewLockMiddleware(c, store)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
