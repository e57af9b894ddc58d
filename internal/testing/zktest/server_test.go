package zktest

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zerolock/zerolock/internal/testing/faultproxy"
)

func TestMain(m *testing.M) {
	Main(m)
}

func TestSharedServer(t *testing.T) {
	s := Shared(t)
	if again := Shared(t); again != s {
		t.Fatal("Shared started a second server")
	}
	conn := s.Connect(t, 10*time.Second)
	path, err := conn.Create("/zktest", []byte("v"), zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if got, _, err := conn.Get(path); err != nil || string(got) != "v" {
		t.Fatalf("get %s: %q, %v", path, got, err)
	}
}

// TestProxyCutExpiresSession cuts a client off for longer than its
// session timeout: the server ends the session, and the client learns it
// when the proxy heals.
func TestProxyCutExpiresSession(t *testing.T) {
	s := Shared(t)
	p := faultproxy.Start(t, s.Addr())
	conn := Connect(t, p.Addr(), 4*TickTime)
	if _, err := conn.Create("/zktest-cut", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	id := conn.SessionID()
	p.Cut()
	admin := s.Connect(t, 10*time.Second)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, _, err := admin.Exists("/zktest-cut")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cut client's ephemeral node outlived its session")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.Heal()
	WaitSession(t, conn)
	if conn.SessionID() == id {
		t.Fatal("the client kept its expired session")
	}
}

// TestStartEndsWithTest: a server from Start serves its test, and is
// killed, its files removed, when that test ends.
func TestStartEndsWithTest(t *testing.T) {
	var s *Server
	t.Run("user", func(t *testing.T) {
		s = Start(t)
		conn := s.Connect(t, 10*time.Second)
		if _, err := conn.Create("/zktest-start", nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("create: %v", err)
		}
	})
	if conn, err := net.DialTimeout("tcp", s.Addr(), time.Second); err == nil {
		_ = conn.Close()
		t.Error("the server of a test that ended still accepts connections")
	}
	if _, err := os.Stat(s.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("its files %s after the test: %v; want them removed", s.dir, err)
	}
}
