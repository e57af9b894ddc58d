package zktest

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// LeakOptions are the goleak options of a package that tests against
// ZooKeeper and go-zero: internal/redistest's, for go-zero's process-wide
// goroutines. The ZooKeeper client's own goroutines end with Conn.Close,
// so none is ignored.
func LeakOptions() []goleak.Option {
	return redistest.LeakOptions()
}

// Main runs a package's tests, stops the shared server if one was
// started, checks for leaked goroutines (with LeakOptions) after a passing
// run, and exits.
func Main(m *testing.M) {
	code := m.Run()
	CloseShared()
	if code == 0 {
		if err := goleak.Find(LeakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
