package observe

import (
	"context"
	"errors"
	"strconv"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	zprom "github.com/zeromicro/go-zero/core/prometheus"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	zprom.Enable() // as go-zero's DevServer does
	goleak.VerifyTestMain(m)
}

// recording returns a context under a recording "request" span and the
// recorder of the spans that end.
func recording(t *testing.T) (context.Context, oteltrace.Span, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	return ctx, span, rec
}

// outcomeCounts reads in's acquisitions by outcome.
func outcomeCounts(in *Instruments) map[Outcome]float64 {
	counts := map[Outcome]float64{}
	for _, o := range []Outcome{Acquired, Busy, Timeout, Error} {
		counts[o] = testutil.ToFloat64(in.outcomes[outcomeIndex(o)])
	}
	return counts
}

// samples is the number of observations of a histogram child.
func samples(t *testing.T, o prom.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prom.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

func TestAcquireMetricsAndSpans(t *testing.T) {
	const name = "TestAcquireMetricsAndSpans"
	in := For("redis", "mutex", name)
	ctx, request, rec := recording(t)
	// Deltas: the registry is the process's, and -count runs a test again.
	before := outcomeCounts(in)
	waits := samples(t, in.wait)

	_, a := in.StartAcquire(ctx, true)
	a.End(Acquired, 7, nil)
	_, b := in.StartAcquire(context.Background(), true) // no recording span: no span
	b.End(Timeout, 0, nil)
	_, c := in.StartAcquire(ctx, false)
	c.End(Error, 0, errors.New("redis down"))
	request.End()

	after := outcomeCounts(in)
	for outcome, want := range map[Outcome]float64{Acquired: 1, Busy: 0, Timeout: 1, Error: 1} {
		if got := after[outcome] - before[outcome]; got != want {
			t.Errorf("acquisitions{outcome=%s} went up by %v; want %v", outcome, got, want)
		}
	}
	if n := samples(t, in.wait) - waits; n != 2 {
		t.Errorf("wait_seconds has %d new samples; want 2 (the waiting acquires only)", n)
	}

	var acquires []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "zerolock.acquire" {
			acquires = append(acquires, s)
			if s.Parent().SpanID() != request.SpanContext().SpanID() || s.SpanContext().TraceID() != request.SpanContext().TraceID() {
				t.Errorf("acquire span's parent %v; want the request span %v", s.Parent().SpanID(), request.SpanContext().SpanID())
			}
		}
	}
	if len(acquires) != 2 {
		t.Fatalf("%d acquire spans; want 2 (the acquires under the request span)", len(acquires))
	}
	attrs := map[string]any{}
	for _, kv := range acquires[0].Attributes() {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	if attrs["zerolock.lock.name"] != name || attrs["zerolock.lock.outcome"] != "acquired" ||
		attrs["zerolock.lock.fence"] != int64(7) || attrs["zerolock.lock.backend"] != "redis" {
		t.Errorf("span attributes %v; want name, backend, outcome acquired and fence 7", attrs)
	}
	if acquires[1].Status().Code != codes.Error {
		t.Errorf("span of a failed acquire has status %v; want Error", acquires[1].Status())
	}
}

func TestWatchEvents(t *testing.T) {
	const name = "TestWatchEvents"
	in := For("redis", "mutex", name)
	ctx, request, rec := recording(t)
	read := func() map[string]float64 {
		return map[string]float64{
			"renewals":      testutil.ToFloat64(in.renewals),
			"renew_failed":  testutil.ToFloat64(in.renewFailed),
			"lost taken":    testutil.ToFloat64(lost.WithLabelValues(name, "redis", "mutex", "taken_over")),
			"lost deleted":  testutil.ToFloat64(lost.WithLabelValues(name, "redis", "mutex", "deleted")),
			"released gone": testutil.ToFloat64(in.releasedGone),
		}
	}
	before, holds := read(), samples(t, in.hold)
	w := in.StartWatch(ctx)
	w.Renewed()
	w.RenewFailed(errors.New("timeout"))
	w.Lost(TakenOver)
	in.Held(0)
	in.ReleasedGone()
	request.End()

	after := read()
	for what, want := range map[string]float64{"renewals": 1, "renew_failed": 1, "lost taken": 1, "lost deleted": 0, "released gone": 1} {
		if got := after[what] - before[what]; got != want {
			t.Errorf("%s went up by %v; want %v", what, got, want)
		}
	}
	if n := samples(t, in.hold) - holds; n != 1 {
		t.Errorf("hold_seconds has %d new samples; want 1", n)
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans; want the request span only", len(spans))
	}
	var events []string
	for _, e := range spans[0].Events() {
		events = append(events, e.Name)
	}
	if len(events) != 2 || events[0] != "zerolock.renew_failed" || events[1] != "zerolock.lock_lost" {
		t.Errorf("request span events %v; want [zerolock.renew_failed zerolock.lock_lost]", events)
	}
}

func TestSwitchesAndBounds(t *testing.T) {
	in := For("redis", "mutex", "TestSwitches")
	ctx, request, rec := recording(t)
	before := testutil.ToFloat64(in.outcomes[0])
	SetMetrics(false)
	SetTracing(false)
	t.Cleanup(func() { SetMetrics(true); SetTracing(true) })
	_, a := in.StartAcquire(ctx, true)
	a.End(Acquired, 0, nil)
	request.End()
	if got := testutil.ToFloat64(in.outcomes[0]) - before; got != 0 {
		t.Errorf("acquired went up by %v with metrics off; want 0", got)
	}
	if n := len(rec.Ended()); n != 1 {
		t.Errorf("%d spans with tracing off; want the request span only", n)
	}
	if For("redis", "mutex", "") != For("redis", "mutex", Unnamed) {
		t.Error("a lock without a name is not reported as unnamed")
	}
	var nilIn *Instruments
	_, z := nilIn.StartAcquire(ctx, true)
	z.End(Acquired, 0, nil) // no panic
	nilIn.StartWatch(ctx).Lost(Deleted)
}

// BenchmarkAcquire is the cost on a lock's hot path: with no recording
// span it must not allocate.
func BenchmarkAcquire(b *testing.B) {
	in := For("redis", "mutex", "BenchmarkAcquire")
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_, a := in.StartAcquire(ctx, false)
		a.End(Acquired, 0, nil)
	}
}

// TestNamesBounded: past MaxNames triples, new names report as "other",
// without taking the registry's lock again for a name seen before.
func TestNamesBounded(t *testing.T) {
	for i := 0; ; i++ {
		registry.mu.Lock()
		full := registry.count >= MaxNames
		registry.mu.Unlock()
		if full {
			break
		}
		For("redis", "bounded", "name-"+strconv.Itoa(i))
	}
	a, b := For("redis", "bounded", "beyond-1"), For("redis", "bounded", "beyond-2")
	if a != b || a.name != "other" {
		t.Fatalf("names past MaxNames report as %q and %q; want both as the one %q", a.name, b.name, "other")
	}
	if again := For("redis", "bounded", "name-0"); again.name != "name-0" {
		t.Errorf("a name registered before the bound reports as %q", again.name)
	}
	// Names made from keys, far past the bound, do not grow the registry
	// past MaxNames entries and MaxNames remembered aliases (and a few
	// "other" entries, one per backend and kind).
	for i := 0; i < 3*MaxNames; i++ {
		if in := For("redis", "bounded", "key-"+strconv.Itoa(i)); in != a {
			t.Fatalf("name %d past the bound reports as %q", i, in.name)
		}
	}
	entries := 0
	registry.m.Range(func(_, _ any) bool { entries++; return true })
	if limit := 2*MaxNames + 20; entries > limit {
		t.Errorf("registry holds %d entries after %d names past the bound; want at most %d", entries, 3*MaxNames, limit)
	}
}

// BenchmarkFor is the cost of a known name's lookup, paid by every lock
// made (one per request in the middleware): no allocation.
func BenchmarkFor(b *testing.B) {
	For("redis", "mutex", "BenchmarkFor")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			For("redis", "mutex", "BenchmarkFor")
		}
	})
}
