package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/zerolock/zerolock/observe"
	"github.com/zerolock/zerolock/redislock"
)

// The observability scenarios measure what zerolock's metrics and traces
// cost a lock cycle: the same go-redis lock with both switched off (the
// baseline, a "floor" for the report) and on. Prometheus is enabled for
// the whole bench (enablePrometheus), as go-zero's DevServer does in a
// service, so the only switch between the two is observe's. Every cycle of
// both runs under a recording parent span, as a request's would, from an
// OpenTelemetry SDK provider that samples everything and exports nothing:
// both pay for the parent, and only "on" adds zerolock's acquire span.
var observabilityScenarios = []scenario{
	{"distinct keys, 1 goroutine, observability", 1, false},
	{"distinct keys, 50 goroutines, observability", 50, false},
}

// obsLockName is the name label of the observability scenarios' locks: one
// name for every key, as a service's lock for one purpose has.
const obsLockName = "bench"

// An obsContender is a cycle contender run with observe's switches set.
type obsContender struct {
	cycleContender
	on bool // metrics and tracing
}

var obsContenders = []obsContender{
	{cycleContender{"floor: zerolock on go-redis, observability off", newObsCycler}, false},
	{cycleContender{"zerolock on go-redis, metrics and tracing on", newObsCycler}, true},
}

// parentTracer starts the parent spans: sampled and recorded, exported
// nowhere.
var parentTracer = sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample())).
	Tracer("github.com/zerolock/zerolock/bench")

func newObsCycler(c clients, key string) cycler {
	l := redislock.New(c.redis, key, redislock.WithExpiry(expiry), redislock.WithTolerance(0),
		redislock.WithName(obsLockName))
	return tracedCycler{lockCycler{l.AcquireCtx, l.ReleaseCtx}}
}

// tracedCycler runs each cycle under its own recording parent span.
type tracedCycler struct{ inner cycler }

func (t tracedCycler) cycle(ctx context.Context) (bool, error) {
	ctx, span := parentTracer.Start(ctx, "request", oteltrace.WithSpanKind(oteltrace.SpanKindServer))
	defer span.End()
	return t.inner.cycle(ctx)
}

// setObservability sets observe's process-wide switches. They are read by
// every lock in the process, so the contenders run one at a time, and
// every other scenario runs with the default (on).
func setObservability(on bool) {
	observe.SetMetrics(on)
	observe.SetTracing(on)
}

// runObservability runs one round of the observability scenarios.
func runObservability(cl clients, admin *redis.Client, rep *report, r int, d time.Duration) {
	defer setObservability(true)
	for _, sc := range observabilityScenarios {
		if !selected(sc.name) {
			continue
		}
		warm := obsContenders[0].cycleContender
		warm.name = sc.name + ": " + warm.name
		setObservability(false)
		runCycles(cl, admin, warm, sc, -1-r, d/5)
		for _, i := range rotation(len(obsContenders), r) {
			c := obsContenders[i]
			setObservability(c.on)
			run := c.cycleContender
			run.name = sc.name + ": " + c.name // its own key prefix
			s := runCycles(cl, admin, run, sc, r, d)
			rep.add(sc.name, c.name, s)
			fmt.Fprintf(os.Stderr, "round %d  %-34s %-26s %9.0f op/s  %5.1f µs/op in Redis  %d errors\n",
				r+1, shorten(sc.name), c.name, s.ops, s.usecOp, s.errors)
		}
	}
}
