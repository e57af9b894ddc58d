package zerolock_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	// Loaded for the metrics they register: the request counters of the
	// middleware (zerolock_http_*) and the interceptor (zerolock_grpc_*).
	_ "github.com/zerolock/zerolock/interceptor"
	_ "github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/observe/lockobs"
)

// dashboardPath is the Grafana dashboard the README points to.
const dashboardPath = "docs/grafana/zerolock.json"

// grafanaDashboard is the part of a dashboard's JSON the test reads.
type grafanaDashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"` // a string, or {"query": "..."}
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			RefID string `json:"refId"`
			Expr  string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

var (
	metricName  = regexp.MustCompile(`\bzerolock_[a-z0-9_]+`)
	groupingBy  = regexp.MustCompile(`\bby\s*\(([^)]*)\)`)
	selectorFor = regexp.MustCompile(`\b(zerolock_[a-z0-9_]+)\{([^}]*)\}`)
	matcherName = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
)

// TestGrafanaDashboard keeps docs/grafana/zerolock.json importable and true
// to the code: it is a dashboard whose panels all query the dashboard's
// data source, and every metric its queries name is one the code
// registers with Prometheus's default registry (the lock metrics of
// observe, the request counters of the middleware and the interceptor),
// with the labels it has.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s is not JSON: %v", dashboardPath, err)
	}
	if d.UID == "" || d.Title == "" || len(d.Panels) == 0 {
		t.Fatalf("%s: uid %q, title %q, %d panels: not a dashboard", dashboardPath, d.UID, d.Title, len(d.Panels))
	}

	lockMetrics := lockMetricFamilies(t)
	var exprs []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d is not unique", p.Title, p.ID)
		}
		ids[p.ID] = true
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %q, want the dashboard's ${datasource}", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			if !metricName.MatchString(tg.Expr) {
				t.Errorf("panel %q, query %s: %q names no zerolock metric", p.Title, tg.RefID, tg.Expr)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(map[string]any); ok {
			if s, ok := q["query"].(string); ok {
				exprs = append(exprs, s)
			}
		}
	}

	for _, expr := range exprs {
		for _, name := range metricName.FindAllString(expr, -1) {
			if !registered(t, lockMetrics, name) {
				t.Errorf("%q: %s is no series of a metric the code registers (a histogram is queried by its _bucket, _sum or _count)", expr, name)
			}
		}
		checkLockLabels(t, lockMetrics, expr)
	}
}

// lockMetricFamilies gathers the lock metrics from the default registry,
// once a lock's Instruments have bound every one of them.
func lockMetricFamilies(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	lockobs.For("redis", "mutex", "dashboard-test")
	families, err := prom.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*dto.MetricFamily{}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "zerolock_lock_") {
			m[f.GetName()] = f
		}
	}
	if len(m) < 7 {
		t.Fatalf("gathered %d zerolock_lock_* metrics, want the 7 of observe", len(m))
	}
	return m
}

// registered reports whether the code registers the series name: a
// gathered lock metric (a histogram's _bucket, _sum and _count included),
// or a name the default registry already holds, which it refuses to
// register again.
func registered(t *testing.T, lockMetrics map[string]*dto.MetricFamily, name string) bool {
	t.Helper()
	if f, ok := lockMetrics[name]; ok {
		return f.GetType() != dto.MetricType_HISTOGRAM // a histogram is queried by its series
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := lockMetrics[base]; ok {
				return f.GetType() == dto.MetricType_HISTOGRAM
			}
		}
	}
	if strings.HasPrefix(name, "zerolock_lock_") {
		return false
	}
	probe := prom.NewGauge(prom.GaugeOpts{Name: name, Help: "dashboard test probe"})
	if err := prom.Register(probe); err == nil {
		prom.Unregister(probe)
		return false
	}
	return true
}

// checkLockLabels checks that the labels expr groups the lock metrics by,
// or selects them on, are labels those metrics have.
func checkLockLabels(t *testing.T, lockMetrics map[string]*dto.MetricFamily, expr string) {
	t.Helper()
	var labels []string
	for _, name := range metricName.FindAllString(expr, -1) {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && lockMetrics[b] != nil {
				base = b
				if suffix == "_bucket" {
					labels = append(labels, "le")
				}
			}
		}
		f, ok := lockMetrics[base]
		if !ok {
			return // not only lock metrics: their labels are not known here
		}
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
	}
	var used []string
	for _, m := range groupingBy.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(m[1], ",") {
			used = append(used, strings.TrimSpace(l))
		}
	}
	for _, m := range selectorFor.FindAllStringSubmatch(expr, -1) {
		for _, l := range matcherName.FindAllStringSubmatch(m[2], -1) {
			used = append(used, l[1])
		}
	}
	for _, l := range used {
		if l != "" && !slices.Contains(labels, l) {
			t.Errorf("%q: label %q is not one of the metric's %v", expr, l, labels)
		}
	}
}
