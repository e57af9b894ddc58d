package obstest

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// Recording starts a recording "request" span under ctx, on a tracer
// provider of the test's own, and returns its context, the span, and the
// recorder of the spans that end.
func Recording(t *testing.T, ctx context.Context) (context.Context, oteltrace.Span, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, request := tp.Tracer("test").Start(ctx, "request")
	return ctx, request, rec
}

// WantLostLockTrace checks what rec recorded of one acquire of a mutex of
// b named name, under a request span, whose watched hold was then
// deleted: one "zerolock.acquire" child span of the request span with the
// lock's name, backend, kind, outcome acquired and fencing token fence,
// and one zerolock.lock_lost event with cause deleted on the request span.
// It returns the acquire span's attributes, for a backend's own checks.
func (b Backend) WantLostLockTrace(t *testing.T, rec *tracetest.SpanRecorder, name string, fence int64) map[string]any {
	t.Helper()
	acquires, requests := spansNamed(rec, "zerolock.acquire"), spansNamed(rec, "request")
	if len(acquires) != 1 || len(requests) != 1 {
		t.Fatalf("%d acquire and %d request spans; want one of each", len(acquires), len(requests))
	}
	acq, req := acquires[0], requests[0]
	if acq.Parent().SpanID() != req.SpanContext().SpanID() || acq.SpanContext().TraceID() != req.SpanContext().TraceID() {
		t.Errorf("acquire span's parent %v in trace %v; want the request span %v in %v",
			acq.Parent().SpanID(), acq.SpanContext().TraceID(), req.SpanContext().SpanID(), req.SpanContext().TraceID())
	}
	attrs := map[string]any{}
	for _, kv := range acq.Attributes() {
		attrs[string(kv.Key)] = kv.Value.AsInterface()
	}
	for k, want := range map[string]any{
		"zerolock.lock.name": name, "zerolock.lock.backend": b.Label, "zerolock.lock.kind": "mutex",
		"zerolock.lock.outcome": "acquired", "zerolock.lock.fence": fence,
	} {
		if attrs[k] != want {
			t.Errorf("acquire span attribute %s = %v; want %v", k, attrs[k], want)
		}
	}
	var causes []any
	for _, e := range req.Events() {
		if e.Name == "zerolock.lock_lost" {
			for _, kv := range e.Attributes {
				if kv.Key == "zerolock.lock.cause" {
					causes = append(causes, kv.Value.AsInterface())
				}
			}
		}
	}
	if len(causes) != 1 || causes[0] != "deleted" {
		t.Errorf("lock_lost events on the request span with causes %v; want one, deleted", causes)
	}
	return attrs
}

// spansNamed returns the ended spans of rec called name, in the order
// they ended.
func spansNamed(rec *tracetest.SpanRecorder, name string) []sdktrace.ReadOnlySpan {
	var spans []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == name {
			spans = append(spans, s)
		}
	}
	return spans
}
