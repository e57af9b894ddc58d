package observe

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	zprom "github.com/zeromicro/go-zero/core/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// MaxNames bounds the distinct lock names a process reports; later names
// are reported as "other", so a name built from a key cannot flood
// Prometheus.
const MaxNames = 1000

// Unnamed is the name label of a lock that was given none.
const Unnamed = "unnamed"

// Outcome is how an acquire ended.
type Outcome string

// The outcomes of an acquire.
const (
	Acquired Outcome = "acquired" // the lock is held
	Busy     Outcome = "busy"     // another holder has it (a try)
	Timeout  Outcome = "timeout"  // a waiting acquire's limit, or its context's deadline, passed
	Error    Outcome = "error"    // the lock service failed, or the context was cancelled
)

// Cause is why a watched lock was lost.
type Cause string

// The causes of a lost lock.
const (
	Deleted     Cause = "deleted"      // the key is gone
	TakenOver   Cause = "taken_over"   // another holder has the key
	RenewFailed Cause = "renew_failed" // renewals failed until the hold may have expired
	MaxHold     Cause = "max_hold"     // zerolock.MaxHold passed
)

var (
	metricsOn atomic.Bool
	tracingOn atomic.Bool
)

func init() {
	metricsOn.Store(true)
	tracingOn.Store(true)
}

// SetMetrics turns the lock metrics on or off for the process (on by
// default; go-zero must also have enabled Prometheus).
func SetMetrics(on bool) { metricsOn.Store(on) }

// SetTracing turns the lock spans and events on or off for the process (on
// by default; only under a recording span).
func SetTracing(on bool) { tracingOn.Store(on) }

// metricsEnabled reports whether an observation is recorded now.
func metricsEnabled() bool { return metricsOn.Load() && zprom.Enabled() }

// Instruments are one lock name's metrics, resolved once, and its span
// attributes: the hot path looks nothing up and allocates nothing.
type Instruments struct {
	name, backend, kind string

	outcomes     [4]prom.Counter // by outcomeIndex
	wait, hold   prom.Observer
	renewals     prom.Counter
	renewFailed  prom.Counter
	lost         [4]prom.Counter // by causeIndex
	releasedGone prom.Counter
	attrs        []attribute.KeyValue
}

// registry holds every Instruments made, by [backend, kind, name]. Reads
// are lock-free (a lock is made per request in the middleware and in
// go-zero-style code); count, under mu, bounds the distinct entries, and
// aliases the names past the bound remembered as "other", so that names
// made from keys cannot grow the map for the life of the process.
var registry struct {
	m       sync.Map // [3]string -> *Instruments
	mu      sync.Mutex
	count   int
	aliases int
}

// For returns the Instruments of the locks called name of kind (mutex,
// semaphore, multilock, rwlock-read, rwlock-write) on backend (redis,
// redlock, etcd, zookeeper). A lock calls it once, when it is made; a
// known name costs a lock-free map read and no allocation. Past MaxNames
// distinct backend, kind and name triples, new names report as "other"
// (the first MaxNames of them still looked up without a lock, the rest
// under the registry's lock, so that the registry stays bounded).
func For(backend, kind, name string) *Instruments {
	if name == "" {
		name = Unnamed
	}
	id := [3]string{backend, kind, name}
	if in, ok := registry.m.Load(id); ok {
		return in.(*Instruments)
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if in, ok := registry.m.Load(id); ok {
		return in.(*Instruments)
	}
	if registry.count >= MaxNames {
		other := [3]string{backend, kind, "other"}
		if in, ok := registry.m.Load(other); ok {
			if registry.aliases < MaxNames {
				registry.m.Store(id, in) // later lookups of this name stay lock-free
				registry.aliases++
			}
			return in.(*Instruments)
		}
		id = other
	}
	in := newInstruments(id[0], id[1], id[2])
	registry.m.Store(id, in)
	registry.count++
	return in
}

func newInstruments(backend, kind, name string) *Instruments {
	in := &Instruments{name: name, backend: backend, kind: kind}
	for i, o := range []Outcome{Acquired, Busy, Timeout, Error} {
		in.outcomes[i] = acquisitions.WithLabelValues(name, backend, kind, string(o))
	}
	for i, c := range []Cause{Deleted, TakenOver, RenewFailed, MaxHold} {
		in.lost[i] = lost.WithLabelValues(name, backend, kind, string(c))
	}
	in.wait = waitSeconds.WithLabelValues(name, backend, kind)
	in.hold = holdSeconds.WithLabelValues(name, backend, kind)
	in.renewals = renewals.WithLabelValues(name, backend, kind)
	in.renewFailed = renewFailures.WithLabelValues(name, backend, kind)
	in.releasedGone = releaseGone.WithLabelValues(name, backend, kind)
	in.attrs = []attribute.KeyValue{attrName.String(name), attrBackend.String(backend), attrKind.String(kind)}
	return in
}

func outcomeIndex(o Outcome) int {
	switch o {
	case Acquired:
		return 0
	case Busy:
		return 1
	case Timeout:
		return 2
	}
	return 3
}

func causeIndex(c Cause) int {
	switch c {
	case Deleted:
		return 0
	case TakenOver:
		return 1
	case RenewFailed:
		return 2
	}
	return 3
}

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
	if tracingOn.Load() {
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
	if metricsEnabled() {
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
