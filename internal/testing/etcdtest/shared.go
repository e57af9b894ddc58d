package etcdtest

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// The server of this test binary, started by the first test that asks.
var shared struct {
	once sync.Once
	srv  *Server
	dir  string
	err  error
}

// Shared returns the etcd server of this test binary, starting it on the
// first call; Main stops it when the tests end. It skips the test when etcd
// is not installed, or fails it when redistest.RequireEnv is set to 1, and
// fails it when the server cannot start.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	path := etcdPath(tb)
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "zerolock-etcd-"); shared.err != nil {
			return
		}
		shared.srv, shared.err = Launch(path, shared.dir)
	})
	if shared.err != nil {
		tb.Fatalf("etcdtest: start etcd: %v", shared.err)
	}
	return shared.srv
}

// Start starts an etcd server for one test and its subtests, killed and
// its data removed when the test ends: for a package whose TestMain is not
// Main, which would leave a shared server to die only with the binary and
// its data behind. It skips or fails the test as Shared does when etcd is
// not installed.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := Launch(etcdPath(tb), tb.TempDir())
	if err != nil {
		tb.Fatalf("etcdtest: start etcd: %v", err)
	}
	tb.Cleanup(s.Kill)
	return s
}

// etcdPath finds etcd on the PATH: a missing one skips the test, or fails
// it when redistest.RequireEnv is set to 1.
func etcdPath(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("etcd")
	if err != nil {
		if os.Getenv(redistest.RequireEnv) == "1" {
			tb.Fatalf("etcdtest: etcd not found and %s=1: %v", redistest.RequireEnv, err)
		}
		tb.Skip("etcdtest: etcd not installed (run make test, or apt-get install etcd-server)")
	}
	return path
}

// stopShared kills the shared server, if one was started, and removes its
// data.
func stopShared() {
	if shared.srv != nil {
		shared.srv.Kill()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
}

// Main runs a package's tests with go-zero's and go-redis's logs off
// (redistest.Quiet), stops the shared server, checks for leaked goroutines
// after a passing run, and exits. The leak check ignores what
// redistest.LeakOptions ignores, for the go-zero servers tests run; the
// etcd client needs nothing more, as its goroutines end with Close.
func Main(m *testing.M) {
	redistest.Quiet()
	code := m.Run()
	stopShared()
	if code == 0 {
		if err := goleak.Find(redistest.LeakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
