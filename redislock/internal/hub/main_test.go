package hub

import (
	"testing"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// TestMain checks that no test leaves a goroutine behind: a hub's receive
// loop, or a probe that outlived its For.
func TestMain(m *testing.M) {
	redistest.Quiet()
	redistest.Main(m)
}
