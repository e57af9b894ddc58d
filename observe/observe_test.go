package observe_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/zerolock/zerolock/internal/testing/obstest"
	"github.com/zerolock/zerolock/observe"
	"github.com/zerolock/zerolock/observe/lockobs"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestSwitches: with SetMetrics(false) and SetTracing(false), a lock's
// acquire is neither counted nor traced, even under a recording span.
func TestSwitches(t *testing.T) {
	redis := obstest.Backend{Label: "redis", Prefix: "observe"}
	name := redis.LockName(t) // turns go-zero's Prometheus on
	in := lockobs.For("redis", "mutex", name)
	ctx, request, rec := obstest.Recording(t, context.Background())
	before := redis.Counts(t, name)

	observe.SetMetrics(false)
	observe.SetTracing(false)
	t.Cleanup(func() { observe.SetMetrics(true); observe.SetTracing(true) })
	_, a := in.StartAcquire(ctx, true)
	a.End(lockobs.Acquired, 0, nil)
	request.End()

	obstest.WantDelta(t, "acquisitions with metrics off", before, redis.Counts(t, name), map[string]float64{"acquired": 0})
	if n := len(rec.Ended()); n != 1 {
		t.Errorf("%d spans with tracing off; want the request span only", n)
	}
}
