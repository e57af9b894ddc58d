package lockobs

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/zerolock/zerolock/internal/testing/obstest"
)

func TestAcquireMetricsAndSpans(t *testing.T) {
	const name = "TestAcquireMetricsAndSpans"
	in := For("redis", "mutex", name)
	ctx, request, rec := obstest.Recording(t, context.Background())
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
