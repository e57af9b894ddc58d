package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zerolock/zerolock/internal/testing/zktest"
	"github.com/zerolock/zerolock/zklock"
)

func TestMain(m *testing.M) {
	zktest.Main(m)
}

// sessionTimeout is the test connections' session timeout: long, so a busy
// machine never expires a session a test did not mean to.
const sessionTimeout = 20 * time.Second

// connect opens a connection to the shared server for one test.
func connect(t *testing.T) *zk.Conn {
	t.Helper()
	return zktest.Shared(t).Connect(t, sessionTimeout)
}

// testRoot gives each test its own root, so tests never share keys.
func testRoot(t *testing.T) zklock.Option {
	return zklock.WithRoot("/zerolock-test/" + t.Name())
}

// queueLen returns how many nodes queue under lock's key.
func queueLen(t *testing.T, conn *zk.Conn, lock *zklock.Lock) int {
	t.Helper()
	children, _, err := conn.Children(lock.QueuePath())
	if errors.Is(err, zk.ErrNoNode) {
		return 0
	}
	if err != nil {
		t.Fatalf("children of %s: %v", lock.QueuePath(), err)
	}
	return len(children)
}

// eventually polls cond until it holds, failing the test after d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mustAcquire takes lock once, failing the test if it cannot.
func mustAcquire(t *testing.T, lock *zklock.Lock) {
	t.Helper()
	ok, err := lock.AcquireCtx(context.Background())
	if err != nil || !ok {
		t.Fatalf("acquire %q: %v, %v", lock.Key(), ok, err)
	}
}

// waitAcquire waits up to 30 s for lock, failing the test if it cannot.
func waitAcquire(t *testing.T, lock *zklock.Lock) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ok, err := lock.AcquireWaitCtx(ctx, 0)
	if err != nil || !ok {
		t.Fatalf("wait for %q: %v, %v", lock.Key(), ok, err)
	}
}
