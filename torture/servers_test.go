package torture

import (
	"fmt"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// TestMutualExclusionOnServers runs test 1's workload (3 OS processes x 30
// goroutines on one key, a Redis counter read and written back inside)
// on Valkey 9 and Redis 8, one report row each: the counter must equal
// the acquisitions and no process may see two of its holds overlap.
// TestMutualExclusionAcrossProcesses is the system's redis-server's row.
func TestMutualExclusionOnServers(t *testing.T) {
	duration, target := 2*time.Second, int64(0)
	if long() {
		duration, target = 2*time.Minute, 10000 // >= 30k per server
	}
	redistest.EachFlavour(t, func(t *testing.T, srv *redistest.Server) {
		r := runExclusion(t, srv, duration, target)
		record(t, fmt.Sprintf("test 1's workload on %s: 3 processes x 30 goroutines, one key, AcquireWait", srv.Version()),
			fmt.Sprintf("%d acquisitions in %v, counter %d, %d overlaps, %d errors",
				r.acquired, r.took.Round(time.Second), r.counter, r.overlaps, r.errors))
	}, redistest.NewFlavours()...)
}
