package redistest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/testproc"
)

// RequireEnv is the environment variable that turns a missing redis-server
// from a skipped test into a failed one.
const RequireEnv = "ZEROLOCK_REQUIRE_REDIS"

const startTimeout = 10 * time.Second

// A Server is a redis-server process listening on 127.0.0.1.
type Server struct {
	path string
	conf string // a config file to start with, before the flags (Sentinel's)
	port int
	dir  string
	args []string

	flavour Flavour       // what path is (SystemRedis unless StartFlavour said)
	version ServerVersion // from INFO server, at the last start

	mu   sync.Mutex
	proc *testproc.Process // nil when killed
}

// Start runs a redis-server on a free loopback port with persistence off,
// waits until it answers PING, and stops it when the test ends. Extra args
// are passed to redis-server as they are (for example "--enable-debug-command",
// "local").
func Start(tb testing.TB, args ...string) *Server {
	tb.Helper()
	s, err := launch(serverPath(tb), tb.TempDir(), args...)
	if err != nil {
		tb.Fatalf("redistest: start redis-server: %v", err)
	}
	tb.Cleanup(s.Kill)
	return s
}

// Launch starts a server outside a test (the bench tool): in dir, on a
// free loopback port, with persistence off. The caller stops it with Kill.
func Launch(dir string, args ...string) (*Server, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, err
	}
	return launch(path, dir, args...)
}

// launch starts a server in dir on a free port, trying another port if the
// chosen one was taken meanwhile.
func launch(path, dir string, args ...string) (*Server, error) {
	return launchOn(testproc.FreePort, path, dir, args...)
}

func launchOn(pick func() (int, error), path, dir string, args ...string) (*Server, error) {
	s := &Server{path: path, dir: dir, args: args}
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if s.port, err = pick(); err != nil {
			return nil, err
		}
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

// Addr returns host:port of the server.
func (s *Server) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Port returns the server's port.
func (s *Server) Port() int {
	return s.port
}

// Client returns a go-redis client for the server, closed when the test ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr()})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill stops the server with SIGKILL, as a crash would, and waits for it to
// exit. Killing a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	s.proc.Kill()
	s.proc = nil
}

// Restart starts the server again on the same port after Kill. With
// persistence off, it comes back empty. Restarting a running server fails
// the test.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.mu.Lock()
	running := s.proc != nil
	s.mu.Unlock()
	if running {
		tb.Fatal("redistest: Restart of a running server; Kill it first")
	}
	if err := s.start(); err != nil {
		tb.Fatalf("redistest: restart redis-server: %v", err)
	}
}

func (s *Server) start() error {
	args := append([]string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", "redis.log",
	}, s.args...)
	if s.conf != "" {
		args = append([]string{s.conf}, args...)
	}
	proc, err := testproc.Start(exec.Command(s.path, args...))
	if err != nil {
		return err
	}
	info, err := waitReady(s.Addr(), proc.Pid(), proc.Exited())
	if err != nil {
		proc.Kill()
		return fmt.Errorf("%w; log: %s", err, testproc.LogTail(filepath.Join(s.dir, "redis.log")))
	}
	s.mu.Lock()
	s.proc = proc
	s.version = versionFromInfo(info)
	s.mu.Unlock()
	return nil
}

// waitReady polls until the server answers with our process's pid, exits,
// or time runs out, and returns the server section of its INFO. Checking
// the pid keeps a test from talking to another process that took the port
// between FreePort and the server's bind.
func waitReady(addr string, pid int, exited <-chan struct{}) (map[string]string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return nil, fmt.Errorf("redis-server on %s exited at start (port taken?)", addr)
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		info, err := c.InfoMap(ctx, "server").Result()
		cancel()
		if err == nil {
			if got := info["Server"]["process_id"]; got != strconv.Itoa(pid) {
				return nil, fmt.Errorf("port of %s answered by process %s, not redis-server %d", addr, got, pid)
			}
			return info["Server"], nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil, errors.New("redis-server on " + addr + " did not answer PING in time")
}

func serverPath(tb testing.TB) string {
	tb.Helper()
	return binaryPath(tb, "redis-server", "redis-server")
}

// binaryPath finds a server binary the tests need: a missing one skips the
// test, or fails it when RequireEnv is set (make test sets it).
func binaryPath(tb testing.TB, name, pkg string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatalf("redistest: %s not found and %s=1: %v", name, RequireEnv, err)
	}
	tb.Skipf("redistest: %s not installed (run make test, or apt-get install %s)", name, pkg)
	return ""
}

// WaitListening polls addr until it accepts a TCP connection, for tests
// that start a server in a goroutine; it fails the test after 10 s.
func WaitListening(tb testing.TB, addr string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			conn.Close()
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("redistest: nothing listens on %s", addr)
}

// Pause stops the server process with SIGSTOP, as a hung host would: its
// connections stay open and nothing answers. Resume undoes it.
func (s *Server) Pause() {
	s.signal(syscall.SIGSTOP)
}

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() {
	s.signal(syscall.SIGCONT)
}

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		s.proc.Signal(sig)
	}
}
