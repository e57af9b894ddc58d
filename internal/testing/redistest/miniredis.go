package redistest

import (
	"net"
	"strconv"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/zerolock/zerolock/internal/testing/testproc"
)

// Miniredis starts a miniredis on a port of its own for the test binary's
// life, closed when tb ends. Use it instead of miniredis.RunT for a
// go-zero store that keeps identity on or carries a hook: go-zero keeps the
// first store's client for an address for the whole process, and a later
// miniredis.RunT (or an example's miniredis.Run) given the same port would
// be served by that client, sending CLIENT SETINFO or going through the
// hook.
func Miniredis(tb testing.TB) *miniredis.Miniredis {
	tb.Helper()
	mr := miniredis.NewMiniRedis()
	for attempt := 0; ; attempt++ {
		port, err := testproc.FreePort()
		if err != nil {
			tb.Fatalf("redistest: miniredis port: %v", err)
		}
		err = mr.StartAddr("127.0.0.1:" + strconv.Itoa(port))
		if err == nil {
			break
		}
		if attempt == 2 {
			tb.Fatalf("redistest: start miniredis: %v", err)
		}
	}
	tb.Cleanup(mr.Close)
	return mr
}

// Listen listens on a loopback port of its own for the test binary's life
// (as Miniredis does), for a fake server a go-zero store will dial.
func Listen(tb testing.TB) net.Listener {
	tb.Helper()
	var l net.Listener
	for attempt := 0; ; attempt++ {
		port, err := testproc.FreePort()
		if err != nil {
			tb.Fatalf("redistest: listen: %v", err)
		}
		l, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			return l
		}
		if attempt == 2 {
			tb.Fatalf("redistest: listen: %v", err)
		}
	}
}
