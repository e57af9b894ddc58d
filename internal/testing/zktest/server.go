package zktest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/testproc"
)

// RequireEnv is the environment variable that turns a missing ZooKeeper
// from a skipped test into a failed one; it is internal/redistest's.
const RequireEnv = "ZEROLOCK_REQUIRE_REDIS"

// The Debian package's server jar, which names its dependencies in its
// manifest's Class-Path, and the Java that runs it.
const (
	serverJar = "/usr/share/java/zookeeper.jar"
	javaName  = "java"
)

// TickTime is the server's tick: sessions may last from 2 to 120 ticks
// (minSessionTimeout and maxSessionTimeout of the generated zoo.cfg), so a
// test can ask for a short session timeout and see it expire quickly.
const TickTime = 250 * time.Millisecond

const startTimeout = 60 * time.Second // a JVM on two busy cores is slow to start

// A Server is a standalone ZooKeeper process listening on 127.0.0.1.
type Server struct {
	addr string
	dir  string
	proc *testproc.Process
}

var shared struct {
	once   sync.Once
	server *Server
	err    error
}

// Shared starts the test binary's server on first use (a JVM start, a few
// seconds) and returns it to every later caller; CloseShared, from
// TestMain (Main calls it), stops it. Each test uses its own keys.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	java := javaPath(tb)
	shared.once.Do(func() {
		shared.server, shared.err = launch(java)
	})
	if shared.err != nil {
		tb.Fatalf("zktest: start zookeeper: %v", shared.err)
	}
	return shared.server
}

// Start starts a server for one test and its subtests (a JVM start, a
// few seconds), killed and its files removed when the test ends: for a
// package whose TestMain is not Main, which would leave a shared server
// to die only with the binary. It skips or fails the test as Shared does
// when ZooKeeper cannot run.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, err := launch(javaPath(tb))
	if err != nil {
		tb.Fatalf("zktest: start zookeeper: %v", err)
	}
	tb.Cleanup(s.kill)
	return s
}

// CloseShared stops the shared server, if one was started.
func CloseShared() {
	if shared.server != nil {
		shared.server.kill()
	}
}

// Addr returns host:port of the server.
func (s *Server) Addr() string {
	return s.addr
}

// Launch starts a server outside a test (the bench does), in a fresh temp
// dir; Kill stops it and removes its files.
func Launch() (*Server, error) {
	java, err := exec.LookPath(javaName)
	if err == nil {
		_, err = os.Stat(serverJar)
	}
	if err != nil {
		return nil, fmt.Errorf("ZooKeeper cannot run (apt-get install zookeeper): %w", err)
	}
	return launch(java)
}

// Kill stops a server from Launch with SIGKILL and removes its files.
func (s *Server) Kill() {
	s.kill()
}

// launch starts a server in a fresh temp dir, trying another port if the
// chosen one was taken meanwhile.
func launch(java string) (*Server, error) {
	dir, err := os.MkdirTemp("", "zerolock-zk-")
	if err != nil {
		return nil, err
	}
	for attempt := 0; attempt < 3; attempt++ {
		var s *Server
		if s, err = start(java, dir); err == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

func start(java, dir string) (*Server, error) {
	port, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	tick := TickTime.Milliseconds()
	cfg := fmt.Sprintf(`tickTime=%d
minSessionTimeout=%d
maxSessionTimeout=%d
dataDir=%s
clientPort=%d
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok
`, tick, 2*tick, 120*tick, data, port)
	conf := filepath.Join(dir, "zoo.cfg")
	if err := os.WriteFile(conf, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "zookeeper.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(java,
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		"-cp", serverJar, "org.apache.zookeeper.server.ZooKeeperServerMain", conf)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	proc, err := testproc.Start(cmd)
	if err != nil {
		return nil, err
	}
	s := &Server{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, proc: proc}
	if err := waitReady(s.addr, proc.Exited()); err != nil {
		proc.Kill()
		return nil, fmt.Errorf("%w; log: %s", err, testproc.LogTail(logFile.Name()))
	}
	return s, nil
}

// waitReady polls until the server answers ruok with imok, exits, or time
// runs out.
func waitReady(addr string, exited <-chan struct{}) error {
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("zookeeper on %s exited at start (port taken?)", addr)
		default:
		}
		if ruok(addr) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("zookeeper on " + addr + " did not answer ruok in time")
}

// ruok sends ZooKeeper's four-letter health check.
func ruok(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte("ruok")); err != nil {
		return false
	}
	reply, _ := bufio.NewReader(c).ReadString('\n')
	return strings.HasPrefix(reply, "imok")
}

// kill stops the server with SIGKILL and removes its files.
func (s *Server) kill() {
	s.proc.Kill()
	_ = os.RemoveAll(s.dir)
}

// javaPath finds java and the server jar: a missing one skips the test,
// or fails it when RequireEnv is set.
func javaPath(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath(javaName)
	if err == nil {
		_, err = os.Stat(serverJar)
	}
	if err == nil {
		return path
	}
	if os.Getenv(RequireEnv) == "1" {
		tb.Fatalf("zktest: ZooKeeper cannot run and %s=1: %v", RequireEnv, err)
	}
	tb.Skipf("zktest: ZooKeeper cannot run (run make test, or apt-get install zookeeper): %v", err)
	return ""
}
