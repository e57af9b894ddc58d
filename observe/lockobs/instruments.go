package lockobs

import (
	"sync"

	prom "github.com/prometheus/client_golang/prometheus"
	zprom "github.com/zeromicro/go-zero/core/prometheus"
	"go.opentelemetry.io/otel/attribute"

	"github.com/zerolock/zerolock/observe/internal/switches"
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

// MetricsEnabled reports whether lock metrics are recorded now: metrics are
// on (observe.SetMetrics) and go-zero has enabled Prometheus. A backend
// skips what only a metric needs when they are not, such as reading the
// clock to time a hold (Held).
func MetricsEnabled() bool { return !switches.MetricsOff.Load() && zprom.Enabled() }

// tracingEnabled reports whether spans and events are recorded now
// (observe.SetTracing), under a recording span.
func tracingEnabled() bool { return !switches.TracingOff.Load() }

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
