package testproc_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/zerolock/zerolock/internal/testing/testproc"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestFreePort(t *testing.T) {
	port, err := testproc.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d is not free: %v", port, err)
	}
	l.Close()
}

// A go-zero store for a killed server's address outlives it, so a port
// must not come back: 500 ports in a row are all distinct (the kernel's
// own choice repeats within 500 nearly always).
func TestFreePortNeverRepeats(t *testing.T) {
	seen := make(map[int]bool)
	for i := 0; i < 500; i++ {
		port, err := testproc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice (call %d)", port, i)
		}
		seen[port] = true
	}
}

// A port-0 listener in the same process (miniredis.Run, httptest) never
// gets a port FreePort hands out: a go-zero client made for a test's
// server, with that test's hooks, would otherwise answer for the next
// server on the address. FreePort's ports lie below the kernel's ephemeral
// range, where port-0 listeners are never put.
func TestFreePortNeverAKernelChoice(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral range to compare with: %v", err)
	}
	start, err := strconv.Atoi(strings.Fields(string(b))[0])
	if err != nil || start < 12000 {
		t.Skipf("ephemeral range %q leaves no room below it", b)
	}
	for i := 0; i < 100; i++ {
		port, err := testproc.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if port >= start {
			t.Fatalf("FreePort = %d, inside the ephemeral range from %d that port-0 listeners share", port, start)
		}
	}
}

// state returns the process state letter of pid from /proc ("S", "T", ...).
func state(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return fields[0]
}

// waitState polls until pid is in state want.
func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for state(t, pid) != want {
		if time.Now().After(deadline) {
			t.Fatalf("process %d in state %s, want %s", pid, state(t, pid), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestProcessSignalAndKill: a started process runs until Kill, stops on
// SIGSTOP and goes on with SIGCONT; Kill closes Exited and may be repeated.
func TestProcessSignalAndKill(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	p, err := testproc.Start(exec.Command(sleep, "60"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	select {
	case <-p.Exited():
		t.Fatal("exited at once")
	default:
	}
	p.Signal(syscall.SIGSTOP)
	waitState(t, p.Pid(), "T")
	p.Signal(syscall.SIGCONT)
	waitState(t, p.Pid(), "S")
	p.Kill()
	select {
	case <-p.Exited():
	default:
		t.Fatal("Exited not closed after Kill")
	}
	p.Kill()                  // again: nothing to do
	p.Signal(syscall.SIGCONT) // an exited process ignores it
}

func TestStartError(t *testing.T) {
	if _, err := testproc.Start(exec.Command(filepath.Join(t.TempDir(), "missing"))); err == nil {
		t.Fatal("started a missing binary")
	}
}

func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	if got := testproc.LogTail(filepath.Join(dir, "none.log")); got != "(no log)" {
		t.Fatalf("missing log: %q", got)
	}
	path := filepath.Join(dir, "server.log")
	long := strings.Repeat("a", 3000) + strings.Repeat("z", 2000)
	if err := os.WriteFile(path, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := testproc.LogTail(path); got != strings.Repeat("z", 2000) {
		t.Fatalf("tail of a long log: %d bytes, %q...", len(got), got[:10])
	}
	if err := os.WriteFile(path, []byte("short"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := testproc.LogTail(path); got != "short" {
		t.Fatalf("short log: %q", got)
	}
}
