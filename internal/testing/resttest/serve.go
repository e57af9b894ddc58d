package resttest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/rest"
)

// startTimeout bounds the wait for a started server to accept connections,
// generously: the tests share two busy cores.
const startTimeout = 10 * time.Second

// Conf returns go-zero's default rest.RestConf for a test server named
// zerolock-test on a free 127.0.0.1 port, with the DevServer off (its HTTP
// server is never stopped, so it would outlive the test) and load shedding
// off: go-zero sheds with an empty 503 once the machine's CPU passes 90 %,
// which make test's parallel -race packages reach on two cores, and a
// test of the lock must not read that 503 as the middleware's answer. A
// test that needs other settings changes the copy and passes it to
// ServeConf.
func Conf(tb testing.TB) rest.RestConf {
	tb.Helper()
	var c rest.RestConf
	if err := conf.FillDefault(&c); err != nil {
		tb.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	c.Name, c.Host, c.Port = "zerolock-test", "127.0.0.1", port
	c.DevServer.Enabled = false
	c.CpuThreshold = 0
	return c
}

// Serve runs a real go-zero rest.Server with Conf's settings until the
// test ends, with the middleware installed by install and the routes
// added with opts, and returns its base URL ("http://127.0.0.1:port").
func Serve(tb testing.TB, install func(*rest.Server), routes []rest.Route, opts ...rest.RouteOption) string {
	tb.Helper()
	return ServeConf(tb, Conf(tb), install, routes, opts...)
}

// ServeConf is Serve with the server's configuration c, which names its
// host and port (start from Conf). It returns once the port accepts
// connections, and fails the test if it does not within 10 s.
//
// rest.MustNewServer sets go-zero's logging up (once per process, to the
// console at info level), undoing a TestMain's logx.Disable; ServeConf
// disables logx again, so a test that reads logs sets its level and
// writer after starting its server.
func ServeConf(tb testing.TB, c rest.RestConf, install func(*rest.Server), routes []rest.Route, opts ...rest.RouteOption) string {
	tb.Helper()
	server := rest.MustNewServer(c)
	logx.Disable()
	install(server)
	server.AddRoutes(routes, opts...)
	started := make(chan *http.Server, 1)
	go server.StartWithOpts(func(s *http.Server) { started <- s })
	hs := <-started
	tb.Cleanup(func() { _ = hs.Shutdown(context.Background()) })

	addr := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return fmt.Sprintf("http://%s", addr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("resttest: rest server on %s did not start", addr)
	return ""
}
