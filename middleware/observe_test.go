package middleware_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/zeromicro/go-zero/rest"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// recordSpans makes a provider that samples every trace and records its
// ended spans otel's global one until the test ends. go-zero's rest server
// resolves its tracer when it starts, so call it before serving, and
// serve with Telemetry.Disabled, or go-zero's agent replaces the provider.
// The provider is process-wide: tests that call this must not be parallel.
func recordSpans(t *testing.T) *tracetest.SpanRecorder {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prev)
		_ = tp.Shutdown(context.Background())
	})
	return rec
}

// endedSpans polls rec until done accepts its ended spans, and fails the
// test after 10 s: a server span ends after its handler wrote the answer,
// so the client may read it first.
func endedSpans(t *testing.T, rec *tracetest.SpanRecorder, done func([]sdktrace.ReadOnlySpan) bool) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans := rec.Ended()
		if done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("spans ended: %v", spanNames(spans))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	names := make([]string, len(spans))
	for i, s := range spans {
		names[i] = s.Name()
	}
	return names
}

// spanAttr is the value of s's attribute key, or "".
func spanAttr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// acquireSpans are the ended "zerolock.acquire" spans of the lock named.
func acquireSpans(spans []sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
	var found []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "zerolock.acquire" && spanAttr(s, "zerolock.lock.name") == name {
			found = append(found, s)
		}
	}
	return found
}

// A request through go-zero's rest.Server and the middleware on a Redis
// store traces its lock: the acquire is a span of its own, the child of
// go-zero's server span for the request (its TraceHandler), named by the
// rule's route, never the key, with the outcome: acquired for the first
// request, busy for the duplicate answered 409. The store's Redis
// commands are children of the acquire span.
func TestAcquireSpanUnderRequestSpan(t *testing.T) {
	rec := recordSpans(t)
	srv := redistest.Start(t)
	const path, route = "/traced/orders", "POST /traced/orders"
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeInflight, Expire: 5 * time.Second,
		Rules: []middleware.LockRule{{Method: http.MethodPost, Path: path, Keys: []string{"json:orderId", "header:X-User"}}}}, newStore(srv))
	c := resttest.Conf(t)
	c.Telemetry.Disabled = true // go-zero's agent would replace the recording provider
	g := resttest.NewGate()
	base := resttest.ServeConf(t, c, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: path, Handler: g.Handle}})

	first := make(chan resttest.Result, 1)
	go func() { first <- resttest.Do(t, http.MethodPost, base+path, `{"orderId":"T-1"}`, "X-User", "alice") }()
	select {
	case <-g.Inside:
	case r := <-first:
		t.Fatalf("the first request ended before the handler: %d %s", r.Status, r.Body)
	case <-time.After(10 * time.Second):
		t.Fatal("the first request never reached the handler")
	}
	if r := resttest.Do(t, http.MethodPost, base+path, `{"orderId":"T-1"}`, "X-User", "alice"); r.Status != http.StatusConflict {
		t.Fatalf("duplicate: %d %s, want 409", r.Status, r.Body)
	}
	close(g.Release)
	if r := <-first; r.Status != http.StatusOK {
		t.Fatalf("first: %d %s", r.Status, r.Body)
	}

	spans := endedSpans(t, rec, func(spans []sdktrace.ReadOnlySpan) bool {
		servers := 0
		for _, s := range spans {
			if s.SpanKind() == oteltrace.SpanKindServer && s.Name() == path {
				servers++
			}
		}
		return servers == 2 && len(acquireSpans(spans, route)) == 2
	})
	byID := map[oteltrace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	outcomes := map[string]int{}
	traces := map[oteltrace.TraceID]bool{}
	for _, acq := range acquireSpans(spans, route) {
		parent, ok := byID[acq.Parent().SpanID()]
		if !ok || parent.SpanKind() != oteltrace.SpanKindServer || parent.Name() != path {
			t.Fatalf("acquire span's parent %v is not go-zero's server span of %s", acq.Parent().SpanID(), path)
		}
		if acq.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Fatalf("acquire span in trace %v, its request's in %v", acq.SpanContext().TraceID(), parent.SpanContext().TraceID())
		}
		traces[acq.SpanContext().TraceID()] = true
		if got := spanAttr(acq, "zerolock.lock.backend"); got != "redis" {
			t.Errorf("backend attribute %q, want redis", got)
		}
		if got := spanAttr(acq, "zerolock.lock.kind"); got != "mutex" {
			t.Errorf("kind attribute %q, want mutex", got)
		}
		outcome := spanAttr(acq, "zerolock.lock.outcome")
		outcomes[outcome]++
		commands := 0
		for _, s := range spans {
			if s.Parent().SpanID() == acq.SpanContext().SpanID() && s.SpanKind() == oteltrace.SpanKindClient {
				commands++
			}
		}
		if commands == 0 {
			t.Errorf("the %s acquire span has no Redis command span under it", outcome)
		}
	}
	if outcomes["acquired"] != 1 || outcomes["busy"] != 1 {
		t.Fatalf("acquire outcomes %v, want one acquired and one busy", outcomes)
	}
	if len(traces) != 2 {
		t.Fatalf("the two acquires are in %d traces, want one per request", len(traces))
	}
}

// lockMetric is the sample of metric family with exactly labels, or nil.
func lockMetric(t *testing.T, family string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := prom.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(labels) {
				continue
			}
			for _, l := range m.GetLabel() {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m
		}
	}
	return nil
}

// acquisitions is zerolock_lock_acquisitions_total of the Redis mutex
// named name, for outcome.
func acquisitions(t *testing.T, name, outcome string) float64 {
	t.Helper()
	return lockMetric(t, "zerolock_lock_acquisitions_total",
		map[string]string{"name": name, "backend": "redis", "kind": "mutex", "outcome": outcome}).GetCounter().GetValue()
}

// holds is how many holds of the Redis mutex named name were observed.
func holds(t *testing.T, name string) uint64 {
	t.Helper()
	return lockMetric(t, "zerolock_lock_hold_seconds",
		map[string]string{"name": name, "backend": "redis", "kind": "mutex"}).GetHistogram().GetSampleCount()
}

// Concurrent duplicates through a rest.Server contend on one Redis lock:
// the lock's own metrics, named by the rule's route, count one acquired
// and as many busy acquisitions as the requests answered 409, and one
// hold when the admitted request released.
func TestLockMetricsCountContention(t *testing.T) {
	srv := redistest.Start(t)
	const path, route, requests = "/contended/orders", "POST /contended/orders", 8
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeInflight, Expire: 5 * time.Second,
		Rules: []middleware.LockRule{{Method: http.MethodPost, Path: path, Keys: []string{"json:orderId", "header:X-User"}}}}, newStore(srv))
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: path, Handler: g.Handle}})
	before := map[string]float64{}
	for _, o := range []string{"acquired", "busy", "timeout", "error"} {
		before[o] = acquisitions(t, route, o)
	}
	held := holds(t, route)

	results := make(chan resttest.Result, requests)
	for range requests {
		go func() { results <- resttest.Do(t, http.MethodPost, base+path, `{"orderId":"C-1"}`, "X-User", "alice") }()
	}
	select {
	case <-g.Inside:
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the handler")
	}
	// The admitted request waits in the handler until released, so every
	// other one meets its lock.
	status := map[int]int{}
	for range requests - 1 {
		status[(<-results).Status]++
	}
	close(g.Release)
	status[(<-results).Status]++
	if status[http.StatusOK] != 1 || status[http.StatusConflict] != requests-1 {
		t.Fatalf("answers %v, want one 200 and %d 409", status, requests-1)
	}

	want := map[string]float64{"acquired": 1, "busy": float64(status[http.StatusConflict]), "timeout": 0, "error": 0}
	for outcome, n := range want {
		if got := acquisitions(t, route, outcome) - before[outcome]; got != n {
			t.Errorf("zerolock_lock_acquisitions_total{name=%q,outcome=%q} rose by %v, want %v", route, outcome, got, n)
		}
	}
	// The hold is observed on release, once the handler returned: the
	// answer may reach the client first.
	deadline := time.Now().Add(10 * time.Second)
	for holds(t, route)-held != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("zerolock_lock_hold_seconds{name=%q} observed %d holds, want 1", route, holds(t, route)-held)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
