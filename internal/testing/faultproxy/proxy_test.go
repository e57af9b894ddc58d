package faultproxy_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerolock/zerolock/internal/testing/faultproxy"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startEcho runs a TCP echo server on a loopback port until the test ends.
func startEcho(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().String()
}

// dial connects to addr, closed when the test ends.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// echo sends a line over c and returns the line read back, or the error.
func echo(c net.Conn, line string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	return got[:len(got)-1], nil
}

// mustEcho fails the test unless a line goes through c and back.
func mustEcho(t *testing.T, c net.Conn, line string) {
	t.Helper()
	if got, err := echo(c, line); err != nil || got != line {
		t.Fatalf("echo %q: %q, %v", line, got, err)
	}
}

// readErr waits for c to end and returns the error its read got.
func readErr(t *testing.T, c net.Conn) error {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err := c.Read(make([]byte, 1))
	if err == nil {
		t.Fatal("read data from a connection that should be closed")
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("the connection stayed open")
	}
	return err
}

func TestForwards(t *testing.T) {
	p := faultproxy.Start(t, startEcho(t))
	c := dial(t, p.Addr())
	mustEcho(t, c, "one")
	mustEcho(t, c, "two")
}

// TestCutRefusesUntilHeal: Cut closes the open connection and every new
// one until Heal; then connections go through again.
func TestCutRefusesUntilHeal(t *testing.T) {
	p := faultproxy.Start(t, startEcho(t))
	before := dial(t, p.Addr())
	mustEcho(t, before, "before")
	p.Cut()
	readErr(t, before)
	during := dial(t, p.Addr()) // the kernel accepts; the proxy closes it
	if _, err := echo(during, "during"); err == nil {
		t.Fatal("a connection made while cut reached the server")
	}
	p.Heal()
	mustEcho(t, dial(t, p.Addr()), "after")
}

// TestResetKeepsAccepting: Reset ends the open connection with a TCP
// reset, and a new connection goes through at once.
func TestResetKeepsAccepting(t *testing.T) {
	p := faultproxy.Start(t, startEcho(t))
	before := dial(t, p.Addr())
	mustEcho(t, before, "before")
	p.Reset()
	if err := readErr(t, before); !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("open connection ended with %v, want a reset", err)
	}
	mustEcho(t, dial(t, p.Addr()), "after")
}

// TestLatency: with a latency set, a round trip takes at least that long;
// set back to 0, the data still flows.
func TestLatency(t *testing.T) {
	p := faultproxy.Start(t, startEcho(t))
	c := dial(t, p.Addr())
	const d = 200 * time.Millisecond
	p.SetLatency(d)
	start := time.Now()
	mustEcho(t, c, "slow")
	if took := time.Since(start); took < d {
		t.Fatalf("round trip took %v with a %v latency", took, d)
	}
	p.SetLatency(0)
	mustEcho(t, c, "fast")
}

// TestClose: after Close the open connection is closed and nothing
// accepts on the address (goleak checks the goroutines ended).
func TestClose(t *testing.T) {
	p := faultproxy.Start(t, startEcho(t))
	c := dial(t, p.Addr())
	mustEcho(t, c, "open")
	p.Close()
	readErr(t, c)
	if c2, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c2.Close()
		t.Fatal("the proxy still accepts after Close")
	}
	p.Close() // again, as the test's cleanup does
}
