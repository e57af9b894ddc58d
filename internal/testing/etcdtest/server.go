package etcdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/zerolock/zerolock/internal/testing/testproc"
)

const startTimeout = 20 * time.Second

// A Server is an etcd process serving clients on 127.0.0.1, a cluster of
// one member.
type Server struct {
	path       string
	dir        string // data dir and log
	name       string // the member's name, random: tells our etcd from another process on the port
	clientPort int
	peerPort   int

	mu   sync.Mutex
	proc *testproc.Process // nil when killed
}

// Launch starts an etcd from the binary at path, with its data in dir, on
// free loopback ports, and waits until it serves reads and writes. The
// caller stops it with Kill. It tries other ports if the chosen ones were
// taken meanwhile.
//
// The member runs with a 50 ms heartbeat and a 500 ms election timeout, so
// that etcd's minimum lease TTL (one and a half election timeouts, rounded
// up to whole seconds: 2 s with the default flags) is 1 s, the lease a
// one-second lock asks for.
func Launch(path, dir string) (*Server, error) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		s := &Server{path: path, dir: dir, name: "zerolock-" + randomHex()}
		if s.clientPort, err = testproc.FreePort(); err != nil {
			return nil, err
		}
		if s.peerPort, err = testproc.FreePort(); err != nil {
			return nil, err
		}
		if err = s.start(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

// Endpoint returns the client URL of the server.
func (s *Server) Endpoint() string {
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.clientPort))
}

// NewClient returns a client of the server with its logging off, for code
// outside tests (a test uses Client); the caller closes it.
func (s *Server) NewClient() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:   []string{s.Endpoint()},
		DialTimeout: 2 * time.Second,
		Logger:      zap.NewNop(),
	})
}

// Client returns a client of the server, closed when the test ends.
func (s *Server) Client(tb testing.TB) *clientv3.Client {
	tb.Helper()
	c, err := s.NewClient()
	if err != nil {
		tb.Fatalf("etcdtest: client: %v", err)
	}
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
	s.proc.Signal(syscall.SIGCONT) // a paused process dies only once resumed
	s.proc.Kill()
	s.proc = nil
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

func (s *Server) start() error {
	clientURL := s.Endpoint()
	peerURL := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(s.peerPort))
	data := filepath.Join(s.dir, s.name)
	logFile, err := os.Create(filepath.Join(s.dir, s.name+".log"))
	if err != nil {
		return err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(s.path,
		"--name", s.name,
		"--data-dir", data,
		"--listen-client-urls", clientURL,
		"--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL,
		"--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", s.name+"="+peerURL,
		"--initial-cluster-state", "new",
		"--heartbeat-interval", "50",
		"--election-timeout", "500",
		"--logger", "zap",
		"--log-outputs", "stderr",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	proc, err := testproc.Start(cmd)
	if err != nil {
		return err
	}
	if err := s.waitReady(proc.Exited()); err != nil {
		proc.Kill()
		return fmt.Errorf("%w; log: %s", err, testproc.LogTail(logFile.Name()))
	}
	s.mu.Lock()
	s.proc = proc
	s.mu.Unlock()
	return nil
}

// waitReady polls until the server answers as the member we started and
// has committed a write, the process exits, or time runs out. Checking the
// member's name keeps a test from talking to another process that took the
// port between FreePort and etcd's bind.
func (s *Server) waitReady(exited <-chan struct{}) error {
	c, err := s.NewClient()
	if err != nil {
		return err
	}
	defer c.Close()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("etcd on %s exited at start (port taken?)", s.Endpoint())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		members, err := c.MemberList(ctx)
		if err == nil {
			_, err = c.Put(ctx, "zerolock/etcdtest/ready", s.name)
		}
		cancel()
		if err == nil {
			if len(members.Members) != 1 || members.Members[0].Name != s.name {
				return fmt.Errorf("port of %s answered by another etcd than %s", s.Endpoint(), s.name)
			}
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("etcd on " + s.Endpoint() + " was not ready in time")
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
