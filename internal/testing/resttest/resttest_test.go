package resttest_test

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"
	"go.uber.org/goleak"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
)

func TestMain(m *testing.M) {
	// go-zero's process-wide goroutines, and each rest server's, outlive
	// the servers: see redistest.LeakOptions.
	goleak.VerifyTestMain(m, redistest.LeakOptions()...)
}

const secret = "resttest-secret"

// TestServeDoToken: a served route answers Do, a JWT route takes Token's
// token and refuses a request without it, and Result carries the status,
// headers and body.
func TestServeDoToken(t *testing.T) {
	base := resttest.Serve(t, func(s *rest.Server) {}, []rest.Route{{
		Method: http.MethodPost, Path: "/echo",
		Handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Seen", r.Header.Get("Content-Type")+" "+r.Header.Get("X-Extra"))
			_, _ = w.Write([]byte("ok"))
		},
	}}, rest.WithJwt(secret))
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Fatalf("base URL %q, want a loopback one", base)
	}
	if r := resttest.Do(t, http.MethodPost, base+"/echo", `{}`); r.Status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d, want 401", r.Status)
	}
	r := resttest.Do(t, http.MethodPost, base+"/echo", `{}`,
		"Authorization", "Bearer "+resttest.Token(t, secret, 7), "X-Extra", "x")
	if r.Status != http.StatusOK || r.Body != "ok" || r.Header.Get("X-Seen") != "application/json x" {
		t.Fatalf("with a token: %d %q, X-Seen %q; want 200 ok, \"application/json x\"", r.Status, r.Body, r.Header.Get("X-Seen"))
	}
}

// TestGateHoldsUntilReleased: a request stays in the Gate until a
// Release, and the Gate echoes the order id.
func TestGateHoldsUntilReleased(t *testing.T) {
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) {},
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}})
	done := make(chan resttest.Result, 1)
	go func() { done <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"G-1"}`) }()
	if fence := <-g.Inside; fence != 0 {
		t.Fatalf("fence %d without a lock middleware, want 0", fence)
	}
	select {
	case r := <-done:
		t.Fatalf("answered %d before the release", r.Status)
	case <-time.After(50 * time.Millisecond): // not a synchronization: a window to catch an early answer
	}
	g.Release <- struct{}{}
	if r := <-done; r.Status != http.StatusOK || !strings.Contains(r.Body, `"orderId":"G-1"`) {
		t.Fatalf("released: %d %s, want 200 with the order id", r.Status, r.Body)
	}
	if r := resttest.Do(t, http.MethodPost, base+"/orders", `{}`); r.Status != http.StatusBadRequest {
		t.Fatalf("without an orderId: %d, want 400", r.Status)
	}
	if n := g.Entered.Load(); n != 1 {
		t.Fatalf("%d requests entered, want 1", n)
	}
}

// TestOrdersConf: the conf locks the Gate's route with the given keys.
func TestOrdersConf(t *testing.T) {
	c := resttest.OrdersConf("window", time.Second, "json:orderId")
	if c.Mode != "window" || c.Expire != time.Second || len(c.Rules) != 1 ||
		c.Rules[0].Method != http.MethodPost || c.Rules[0].Path != "/orders" || strings.Join(c.Rules[0].Keys, ",") != "json:orderId" {
		t.Fatalf("OrdersConf = %+v", c)
	}
}

// TestServeConfRetriesATakenPort: a server whose port another listener
// took before the bind is started on another port, and the URL says so.
func TestServeConfRetriesATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	c := resttest.Conf(t)
	c.Port = taken.Addr().(*net.TCPAddr).Port
	base := resttest.ServeConf(t, c, func(s *rest.Server) {}, []rest.Route{{
		Method: http.MethodGet, Path: "/ping",
		Handler: func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("pong")) },
	}})
	if base == "http://"+taken.Addr().String() {
		t.Fatalf("the server says it runs on the taken port: %s", base)
	}
	if r := resttest.Do(t, http.MethodGet, base+"/ping", ""); r.Status != http.StatusOK || r.Body != "pong" {
		t.Fatalf("GET /ping on %s: %d %q", base, r.Status, r.Body)
	}
}
