package observe_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
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
	name := obstest.LockName(t, "observe") // turns go-zero's Prometheus on
	in := lockobs.For("redis", "mutex", name)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	before := obstest.Counts(t, "redis", name)

	observe.SetMetrics(false)
	observe.SetTracing(false)
	t.Cleanup(func() { observe.SetMetrics(true); observe.SetTracing(true) })
	_, a := in.StartAcquire(ctx, true)
	a.End(lockobs.Acquired, 0, nil)
	request.End()

	obstest.WantDelta(t, "acquisitions with metrics off", before, obstest.Counts(t, "redis", name), map[string]float64{"acquired": 0})
	if n := len(rec.Ended()); n != 1 {
		t.Errorf("%d spans with tracing off; want the request span only", n)
	}
}
