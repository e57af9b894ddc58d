package zktest

import (
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// Connect opens a quiet connection to the server, waits until it has a
// session, and closes it when the test ends.
func (s *Server) Connect(tb testing.TB, sessionTimeout time.Duration) *zk.Conn {
	tb.Helper()
	return Connect(tb, s.addr, sessionTimeout)
}

// Connect opens a quiet connection to addr (a server or a Proxy), waits
// until it has a session, and closes it when the test ends.
func Connect(tb testing.TB, addr string, sessionTimeout time.Duration) *zk.Conn {
	tb.Helper()
	conn, _, err := zk.Connect([]string{addr}, sessionTimeout, zk.WithLogger(quietLogger{}), zk.WithLogInfo(false))
	if err != nil {
		tb.Fatalf("zktest: connect to %s: %v", addr, err)
	}
	tb.Cleanup(conn.Close)
	WaitSession(tb, conn)
	return conn
}

// WaitSession polls until conn has a session; it fails the test after
// 20 s.
func WaitSession(tb testing.TB, conn *zk.Conn) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for conn.State() != zk.StateHasSession {
		if time.Now().After(deadline) {
			tb.Fatalf("zktest: no session after 20 s (state %v)", conn.State())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// quietLogger drops the client's logs: tests break connections on
// purpose, and the client would report every reconnect.
type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}
