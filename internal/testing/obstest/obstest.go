package obstest

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	zprom "github.com/zeromicro/go-zero/core/prometheus"
)

// A Backend reads back the lock metrics of one backend and runs the shared
// scenarios on its locks.
type Backend struct {
	Label  string // the backend label its locks report: "etcd", "zookeeper"
	Prefix string // what its tests' lock names start with: "etcdlock"
}

// LockName turns go-zero's Prometheus on, as its DevServer does, and
// returns a lock name of the test's own, b's prefix first: the metrics are
// process-wide.
func (b Backend) LockName(t *testing.T) string {
	t.Helper()
	zprom.Enable()
	return b.Prefix + "." + strings.ReplaceAll(t.Name(), "/", ".")
}

// Sample is what the default registry holds for one metric's series: a
// counter's value, or a histogram's sample count and sum.
type Sample struct{ Count, Sum float64 }

// Gather reads family from Prometheus's default registry, summed over the
// series of b whose name label is name and whose other labels include
// extra (name=value pairs).
func (b Backend) Gather(t *testing.T, family, name string, extra ...string) Sample {
	t.Helper()
	want := map[string]string{"name": name, "backend": b.Label}
	for i := 0; i+1 < len(extra); i += 2 {
		want[extra[i]] = extra[i+1]
	}
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var s Sample
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			matched := 0
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok {
					if v != l.GetValue() {
						continue series
					}
					matched++
				}
			}
			if matched != len(want) {
				continue
			}
			if c := m.GetCounter(); c != nil {
				s.Count += c.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				s.Count += float64(h.GetSampleCount())
				s.Sum += h.GetSampleSum()
			}
		}
	}
	return s
}

// Counts reads the acquisitions of name on b by outcome.
func (b Backend) Counts(t *testing.T, name string) map[string]float64 {
	t.Helper()
	c := map[string]float64{}
	for _, o := range []string{"acquired", "busy", "timeout", "error"} {
		c[o] = b.Gather(t, "zerolock_lock_acquisitions_total", name, "outcome", o).Count
	}
	return c
}

// LostBy reads the watched holds of name on b lost, by cause.
func (b Backend) LostBy(t *testing.T, name string) map[string]float64 {
	t.Helper()
	c := map[string]float64{}
	for _, cause := range []string{"deleted", "taken_over", "renew_failed", "max_hold"} {
		c[cause] = b.Gather(t, "zerolock_lock_lost_total", name, "cause", cause).Count
	}
	return c
}

// WantDelta fails the test unless every metric moved by what want says
// between before and after.
func WantDelta(t *testing.T, what string, before, after, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		if d := after[k] - before[k]; d != w {
			t.Errorf("%s %s went up by %v; want %v", what, k, d, w)
		}
	}
}
