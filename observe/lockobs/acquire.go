package lockobs

import (
	"context"
	"reflect"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// An Acquire is one acquire being observed, from StartAcquire to End. It
// is a value; its zero value (from nil Instruments) observes nothing.
type Acquire struct {
	in      *Instruments
	span    oteltrace.Span // nil unless traced
	start   time.Time      // set for waiting acquires and traced ones
	waiting bool
}

// StartAcquire begins observing an acquire; waiting says whether it may
// wait (its wait time is recorded). Under a recording span it starts the
// child span "zerolock.acquire" and returns its context, for the commands
// the acquire sends. On nil Instruments it does nothing.
func (in *Instruments) StartAcquire(ctx context.Context, waiting bool) (context.Context, Acquire) {
	if in == nil {
		return ctx, Acquire{}
	}
	a := Acquire{in: in, waiting: waiting}
	if waiting {
		a.start = time.Now()
	}
	if tracingEnabled() {
		if parent := oteltrace.SpanFromContext(ctx); parent.IsRecording() {
			if a.start.IsZero() {
				a.start = time.Now()
			}
			ctx, a.span = tracerOf(parent.TracerProvider()).Start(ctx, "zerolock.acquire",
				oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithAttributes(in.attrs...))
		}
	}
	return ctx, a
}

// End records how the acquire ended: its outcome, its wait time when it
// could wait, and on its span the outcome, wait time, fencing token (when
// not zero) and error.
func (a Acquire) End(outcome Outcome, fence int64, err error) {
	if a.in == nil {
		return
	}
	if MetricsEnabled() {
		a.in.outcomes[outcomeIndex(outcome)].Inc()
		if a.waiting {
			a.in.wait.Observe(time.Since(a.start).Seconds())
		}
	}
	if a.span != nil {
		a.span.SetAttributes(attrOutcome.String(string(outcome)), attrWaitMs.Float64(float64(time.Since(a.start))/float64(time.Millisecond)))
		if fence != 0 {
			a.span.SetAttributes(attrFence.Int64(fence))
		}
		if err != nil {
			a.span.RecordError(err)
			a.span.SetStatus(codes.Error, err.Error())
		}
		a.span.End()
	}
}

// cachedTracer is the tracer of the provider spans were last started
// under: asking a provider for its tracer takes the SDK's lock, so it is
// done once per provider, not per acquire.
type cachedTracer struct {
	provider oteltrace.TracerProvider
	tracer   oteltrace.Tracer
}

var lastTracer atomic.Pointer[cachedTracer]

// tracerOf returns zerolock's tracer from tp. A provider of a type that
// cannot be compared (none of OpenTelemetry's) is asked every time.
func tracerOf(tp oteltrace.TracerProvider) oteltrace.Tracer {
	if !reflect.TypeOf(tp).Comparable() {
		return tp.Tracer(scope)
	}
	if c := lastTracer.Load(); c != nil && c.provider == tp {
		return c.tracer
	}
	c := &cachedTracer{provider: tp, tracer: tp.Tracer(scope)}
	lastTracer.Store(c)
	return c.tracer
}
