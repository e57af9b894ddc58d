package interceptor_test

import (
	"context"
	"testing"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/zeromicro/go-zero/core/prometheus"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// recordSpans makes a provider that samples every trace and records its
// ended spans otel's global one until the test ends; serve with
// Telemetry.Disabled, or go-zero's agent replaces it. The provider is
// process-wide: tests that call this must not be parallel.
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

// spanAttr is the value of s's attribute key, or "".
func spanAttr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// lockAcquisitions is zerolock_lock_acquisitions_total of the Redis mutex
// named name, for outcome.
func lockAcquisitions(t *testing.T, name, outcome string) float64 {
	t.Helper()
	families, err := prom.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name": name, "backend": "redis", "kind": "mutex", "outcome": outcome}
	for _, f := range families {
		if f.GetName() != "zerolock_lock_acquisitions_total" {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(want) {
				continue
			}
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// A call through a zrpc server and the interceptor on a Redis store traces
// its lock: the acquire is a span of its own, the child of zrpc's server
// span for the call, named by the rule's full method, with the outcome:
// acquired for the first call, busy for the duplicate answered Aborted.
// The lock's metrics count the same: one acquired, one busy.
func TestAcquireSpanUnderRPCSpan(t *testing.T) {
	prometheus.Enable()
	rec := recordSpans(t)
	srv := redistest.Start(t)
	impl := newPayments()
	impl.release = make(chan struct{})
	sc := zrpcConf(t)
	sc.Telemetry.Disabled = true // go-zero's agent would replace the recording provider
	client := serveZrpcConf(t, sc, impl, nil,
		interceptor.MustUnaryServerInterceptor(payConf(interceptor.ModeInflight, "field:order.id", "metadata:x-user-id"), newStore(srv)))
	acquired, busy := lockAcquisitions(t, payMethod, "acquired"), lockAcquisitions(t, payMethod, "busy")

	first := make(chan error, 1)
	go func() {
		_, err := client.Pay(withUser("alice"), order("TR-1"))
		first <- err
	}()
	select {
	case <-impl.inside:
	case err := <-first:
		t.Fatalf("the first call ended before the method: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the first call never reached the method")
	}
	if _, err := client.Pay(withUser("alice"), order("TR-1")); status.Code(err) != codes.Aborted {
		t.Fatalf("duplicate: %v, want Aborted", err)
	}
	close(impl.release)
	if err := <-first; err != nil {
		t.Fatalf("first: %v", err)
	}

	const serverSpan = "zerolock.test.Payments/Pay" // zrpc names it by the full method, less its slash
	var spans, acquires []sdktrace.ReadOnlySpan
	deadline := time.Now().Add(10 * time.Second)
	for {
		spans, acquires = rec.Ended(), nil
		servers := 0
		for _, s := range spans {
			switch {
			case s.Name() == "zerolock.acquire" && spanAttr(s, "zerolock.lock.name") == payMethod:
				acquires = append(acquires, s)
			case s.SpanKind() == oteltrace.SpanKindServer && s.Name() == serverSpan:
				servers++
			}
		}
		if servers == 2 && len(acquires) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ended: %d server spans of %s, %d acquire spans named %s; want 2 of each",
				servers, serverSpan, len(acquires), payMethod)
		}
		time.Sleep(5 * time.Millisecond)
	}
	byID := map[oteltrace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = s
	}
	outcomes := map[string]int{}
	for _, acq := range acquires {
		parent, ok := byID[acq.Parent().SpanID()]
		if !ok || parent.SpanKind() != oteltrace.SpanKindServer || parent.Name() != serverSpan {
			t.Fatalf("acquire span's parent %v is not zrpc's server span", acq.Parent().SpanID())
		}
		if acq.SpanContext().TraceID() != parent.SpanContext().TraceID() {
			t.Fatalf("acquire span in trace %v, its call's in %v", acq.SpanContext().TraceID(), parent.SpanContext().TraceID())
		}
		if got := spanAttr(acq, "zerolock.lock.backend"); got != "redis" {
			t.Errorf("backend attribute %q, want redis", got)
		}
		outcomes[spanAttr(acq, "zerolock.lock.outcome")]++
	}
	if outcomes["acquired"] != 1 || outcomes["busy"] != 1 {
		t.Fatalf("acquire outcomes %v, want one acquired and one busy", outcomes)
	}
	if got := lockAcquisitions(t, payMethod, "acquired") - acquired; got != 1 {
		t.Errorf("acquired acquisitions rose by %v, want 1", got)
	}
	if got := lockAcquisitions(t, payMethod, "busy") - busy; got != 1 {
		t.Errorf("busy acquisitions rose by %v, want 1 (the Aborted duplicate)", got)
	}
}
