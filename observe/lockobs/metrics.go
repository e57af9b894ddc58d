package lockobs

import (
	prom "github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
)

// scope is the instrumentation scope of zerolock's spans.
const scope = "github.com/zerolock/zerolock"

// The span and event attributes.
const (
	attrName    = attribute.Key("zerolock.lock.name")
	attrBackend = attribute.Key("zerolock.lock.backend")
	attrKind    = attribute.Key("zerolock.lock.kind")
	attrOutcome = attribute.Key("zerolock.lock.outcome")
	attrWaitMs  = attribute.Key("zerolock.lock.wait_ms")
	attrFence   = attribute.Key("zerolock.lock.fence")
	attrCause   = attribute.Key("zerolock.lock.cause")
	attrError   = attribute.Key("zerolock.lock.error")
)

var labels = []string{"name", "backend", "kind"}

// The metrics, registered with Prometheus's default registry (as go-zero's
// core/metric does) when the package is loaded. They use the Prometheus
// client directly rather than core/metric, whose every observation
// allocates its label slice, even with Prometheus off: here the label
// values are bound once per lock name (For), and an observation costs a
// few nanoseconds and no allocation.
var (
	acquisitions = register(prom.NewCounterVec(prom.CounterOpts{
		Namespace: "zerolock", Subsystem: "lock", Name: "acquisitions_total",
		Help: "Lock acquires by lock name, backend, kind and outcome (acquired, busy, timeout, error).",
	}, append(labels, "outcome")))
	waitSeconds = register(prom.NewHistogramVec(prom.HistogramOpts{
		Namespace: "zerolock", Subsystem: "lock", Name: "wait_seconds",
		Help:    "How long waiting acquires waited, won or not.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 20, 30},
	}, labels))
	holdSeconds = register(prom.NewHistogramVec(prom.HistogramOpts{
		Namespace: "zerolock", Subsystem: "lock", Name: "hold_seconds",
		Help:    "How long locks were held, from the acquire to the release.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	}, labels))
	renewals = register(prom.NewCounterVec(prom.CounterOpts{
		Namespace: "zerolock", Subsystem: "lock", Name: "renewals_total",
		Help: "Watchdog renewals that extended a hold.",
	}, labels))
	renewFailures = register(prom.NewCounterVec(prom.CounterOpts{
		Namespace: "zerolock", Subsystem: "lock", Name: "renew_failures_total",
		Help: "Watchdog renewals that failed (the lock service did not answer).",
	}, labels))
	lost = register(prom.NewCounterVec(prom.CounterOpts{
		Namespace: "zerolock", Subsystem: "lock", Name: "lost_total",
		Help: "Watched holds lost, by cause (deleted, taken_over, renew_failed, max_hold).",
	}, append(labels, "cause")))
	releaseGone = register(prom.NewCounterVec(prom.CounterOpts{
		Namespace: "zerolock", Subsystem: "lock", Name: "release_gone_total",
		Help: "Releases that found the lock already gone: expired or taken, a sign the expiry is too short.",
	}, labels))
)

// register registers c with the default registry, or returns the collector
// already registered under its name (a second copy of the package, as in
// tests that load it twice).
func register[C prom.Collector](c C) C {
	if err := prom.Register(c); err != nil {
		if are, ok := err.(prom.AlreadyRegisteredError); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}
