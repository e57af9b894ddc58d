package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/example/api/internal/config"
	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/example/api/internal/handler"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// TestMain fails the run if a test leaves a goroutine behind, such as the
// embedded miniredis's clock or a lock's watchdog (go-zero's own
// process-wide goroutines aside: see redistest.LeakOptions).
func TestMain(m *testing.M) {
	redistest.Quiet()
	redistest.Main(m)
}

// loadConfig reads the repository's etc/api.yaml, as go run does, with a
// free port, the in-process payments service's etc/rpc.yaml found from
// example/api, and go-zero's load shedding off: it refuses requests with an
// empty 503 while the machine's CPU is over 90 % busy, as it is when make
// test runs every package at once on a small machine.
func loadConfig(t *testing.T) config.Config {
	t.Helper()
	var c config.Config
	conf.MustLoad(filepath.Join("..", "..", "etc", "api.yaml"), &c, conf.UseEnv())
	// go run reads the in-process payments service's config from the
	// repository root, the test from example/api.
	c.InProcessPayments = filepath.Join("..", "..", c.InProcessPayments)
	c.CpuThreshold = 0
	c.Port = freePort(t)
	return c
}

// freePort is a loopback port the kernel had free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer runs the service as main does, on c's port, until the test
// ends. Another process may take the port between loadConfig and the
// server's bind (make test runs every package at once): the server is then
// started again on another port, up to three times. The base URL it
// returns has the port the server got.
func startServer(t *testing.T, c config.Config) (base string, sc *svc.ServiceContext) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		base, sc, err := tryStartServer(t, c)
		if err == nil {
			return base, sc
		}
		if attempt == 3 || !errors.Is(err, syscall.EADDRINUSE) {
			t.Fatalf("start the service on port %d: %v", c.Port, err)
		}
		c.Port = freePort(t)
	}
}

// tryStartServer starts the service on c's port and waits until it
// accepts a connection; go-zero panics when it cannot bind, which it
// returns as an error.
func tryStartServer(t *testing.T, c config.Config) (string, *svc.ServiceContext, error) {
	t.Helper()
	server := rest.MustNewServer(c.RestConf)
	logx.Disable() // MustNewServer set logging up again
	sc := svc.NewServiceContext(c)
	httpx.SetErrorHandlerCtx(errorx.Handler)
	handler.RegisterHandlers(server, sc)
	if err := sc.Locks.CheckRoutes(server); err != nil {
		sc.Close()
		t.Fatalf("etc/api.yaml's lock rules and the demo's routes disagree: %v", err)
	}
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
	var hs *http.Server
	select {
	case hs = <-started:
	case err := <-failed:
		sc.Close()
		return "", nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", c.Port)
	// Ours once our server's ConnState hook sees the probe's connection: a
	// connection to the port could reach another process's server while
	// ours fails to bind.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			select {
			case err := <-failed:
				sc.Close()
				return "", nil, err
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		select {
		case <-accepted:
			conn.Close()
			t.Cleanup(func() {
				_ = hs.Shutdown(context.Background())
				sc.Close()
			})
			return "http://" + addr, sc, nil
		case err := <-failed:
			conn.Close()
			sc.Close()
			return "", nil, err
		case <-time.After(time.Second):
			conn.Close()
		}
	}
	_ = hs.Shutdown(context.Background())
	sc.Close()
	return "", nil, fmt.Errorf("the service did not accept a connection within 5 s")
}

// TestStartServerRetriesATakenPort: the harness starts the service on
// another port when its own was taken before the bind.
func TestStartServerRetriesATakenPort(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	c := loadConfig(t)
	c.Port = taken.Addr().(*net.TCPAddr).Port
	base, _ := startServer(t, c)
	if base == fmt.Sprintf("http://127.0.0.1:%d", c.Port) {
		t.Fatalf("the service says it runs on the taken port %d", c.Port)
	}
	if n := stockOf(t, base, "sku-1"); n <= 0 {
		t.Fatalf("stock of sku-1 on %s = %d", base, n)
	}
}

func deduct(t *testing.T, base, sku string, count int) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(base+"/stock/"+sku+"/deduct", "application/json",
		strings.NewReader(fmt.Sprintf(`{"count":%d}`, count)))
	if err != nil {
		t.Error(err)
		return 0, nil
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Errorf("status %d with a body that is not JSON: %v", resp.StatusCode, err)
	}
	return resp.StatusCode, body
}

func stockOf(t *testing.T, base, sku string) int {
	t.Helper()
	resp, err := http.Get(base + "/stock/" + sku)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Stock int }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Stock
}

func TestEmbeddedMiniredisWhenNoHost(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	c := loadConfig(t)
	if c.Redis.Host != "" {
		t.Fatalf("etc/api.yaml names Redis host %q without ZEROLOCK_REDIS_HOST", c.Redis.Host)
	}
	c.DeductHold = 0
	base, _ := startServer(t, c)
	checkDeductions(t, base)
}

func TestRealRedisFromConfig(t *testing.T) {
	srv := redistest.Start(t)
	t.Setenv("ZEROLOCK_REDIS_HOST", srv.Addr())
	c := loadConfig(t)
	c.DeductHold = 0
	base, sc := startServer(t, c)
	if sc.Config.Redis.Host != srv.Addr() {
		t.Fatalf("service uses %q, want the configured %q", sc.Config.Redis.Host, srv.Addr())
	}
	checkDeductions(t, base)
	if n := srv.Client(t).Exists(context.Background(), svc.StockKey("sku-1")).Val(); n != 1 {
		t.Fatal("the stock was not written to the configured Redis")
	}
}

// checkDeductions sends 20 concurrent deductions of one unit: each is
// either done (200) or refused as busy (409, JSON), and the stock left is
// exactly the seed minus the successful ones.
func checkDeductions(t *testing.T, base string) {
	t.Helper()
	before := stockOf(t, base, "sku-1")
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		wg    sync.WaitGroup
	)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, body := deduct(t, base, "sku-1", 1)
			if code == http.StatusConflict && body["message"] == nil {
				t.Errorf("409 without a message: %v", body)
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusOK]+codes[http.StatusConflict] != 20 || codes[http.StatusOK] == 0 {
		t.Fatalf("status codes %v, want only 200 and 409, at least one 200", codes)
	}
	if after := stockOf(t, base, "sku-1"); after != before-codes[http.StatusOK] {
		t.Fatalf("stock %d -> %d after %d successful deductions", before, after, codes[http.StatusOK])
	}
	if code, _ := deduct(t, base, "sku-2", 1000); code != http.StatusUnprocessableEntity {
		t.Fatalf("over-deduction answered %d, want 422", code)
	}
	if code, _ := deduct(t, base, "nope", 1); code != http.StatusNotFound {
		t.Fatalf("unknown item answered %d, want 404", code)
	}
}

// TestBusyItemIsRefused holds a deduction inside its lock and shows that a
// second one for the same item is refused while another item is not.
func TestBusyItemIsRefused(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	c := loadConfig(t)
	c.DeductHold = time.Second
	base, sc := startServer(t, c)

	done := make(chan int, 1)
	go func() {
		code, _ := deduct(t, base, "sku-1", 1)
		done <- code
	}()
	// Wait until the first deduction holds the lock.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if ok, _ := sc.Redis.Exists(svc.LockKey("sku-1")); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("first deduction never took the lock")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, body := deduct(t, base, "sku-1", 1); code != http.StatusConflict {
		t.Fatalf("duplicate while held: %d %v, want 409", code, body)
	}
	if code, _ := deduct(t, base, "sku-2", 1); code != http.StatusOK {
		t.Fatalf("another item while sku-1 is held: %d, want 200", code)
	}
	if code := <-done; code != http.StatusOK {
		t.Fatalf("first deduction: %d, want 200", code)
	}
	if ok, _ := sc.Redis.Exists(svc.LockKey("sku-1")); ok {
		t.Fatal("lock still held after the deduction returned")
	}
}
