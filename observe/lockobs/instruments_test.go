package lockobs

import (
	"context"
	"strconv"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	zprom "github.com/zeromicro/go-zero/core/prometheus"
	"go.uber.org/goleak"

	"github.com/zerolock/zerolock/internal/testing/obstest"
)

func TestMain(m *testing.M) {
	zprom.Enable() // as go-zero's DevServer does
	goleak.VerifyTestMain(m)
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

// TestUnnamedAndNil: a lock without a name reports as Unnamed, and nil
// Instruments (a lock made without them) observe nothing, without
// panicking. Turning the metrics and traces off is observe's
// TestSwitches.
func TestUnnamedAndNil(t *testing.T) {
	if For("redis", "mutex", "") != For("redis", "mutex", Unnamed) {
		t.Error("a lock without a name is not reported as unnamed")
	}
	ctx, request, _ := obstest.Recording(t, context.Background())
	defer request.End()
	var nilIn *Instruments
	_, z := nilIn.StartAcquire(ctx, true)
	z.End(Acquired, 0, nil) // no panic
	nilIn.StartWatch(ctx).Lost(Deleted)
}
