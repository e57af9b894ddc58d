package resttest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"syscall"
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
	port, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
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
// host and port (start from Conf). It returns once the server accepts
// connections, and fails the test if it does not within 10 s.
//
// Another process may take the port between Conf and the server's bind
// (make test runs every package at once); go-zero then panics in the
// serving goroutine, which ServeConf recovers, and it starts the server
// again on another free port, up to three times: the URL it returns has
// the port the server got.
//
// rest.MustNewServer sets go-zero's logging up (once per process, to the
// console at info level), undoing a TestMain's logx.Disable; ServeConf
// disables logx again, so a test that reads logs sets its level and
// writer after starting its server.
func ServeConf(tb testing.TB, c rest.RestConf, install func(*rest.Server), routes []rest.Route, opts ...rest.RouteOption) string {
	tb.Helper()
	for attempt := 1; ; attempt++ {
		base, err := serveOnce(tb, c, install, routes, opts...)
		if err == nil {
			return base
		}
		if attempt == 3 || !errors.Is(err, syscall.EADDRINUSE) {
			tb.Fatalf("resttest: rest server on %s:%d: %v", c.Host, c.Port, err)
		}
		if c.Port, err = freePort(); err != nil {
			tb.Fatal(err)
		}
	}
}

// serveOnce starts the server on c's port and waits until it has accepted
// a connection of its own (its ConnState hook says so: a connection to the
// port could reach another process's server while ours fails to bind).
func serveOnce(tb testing.TB, c rest.RestConf, install func(*rest.Server), routes []rest.Route, opts ...rest.RouteOption) (string, error) {
	tb.Helper()
	server := rest.MustNewServer(c)
	logx.Disable()
	install(server)
	server.AddRoutes(routes, opts...)
	started := make(chan *http.Server, 1)
	accepted := make(chan struct{}, 1)
	failed := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				err, ok := r.(error)
				if !ok {
					err = fmt.Errorf("%v", r)
				}
				failed <- err
			}
		}()
		server.StartWithOpts(func(s *http.Server) {
			s.ConnState = func(net.Conn, http.ConnState) {
				select {
				case accepted <- struct{}{}:
				default:
				}
			}
			started <- s
		})
	}()
	hs := <-started
	addr := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	for deadline := time.Now().Add(startTimeout); time.Now().Before(deadline); {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			select {
			case err := <-failed:
				return "", err
			case <-time.After(5 * time.Millisecond):
			}
			continue
		}
		select {
		case <-accepted:
			conn.Close()
			tb.Cleanup(func() { _ = hs.Shutdown(context.Background()) })
			return fmt.Sprintf("http://%s", addr), nil
		case err := <-failed:
			conn.Close()
			return "", err
		case <-time.After(time.Second):
			conn.Close()
		}
	}
	_ = hs.Shutdown(context.Background())
	return "", fmt.Errorf("did not start within %v", startTimeout)
}

// freePort is a loopback port the kernel had free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
