package middleware_test

import (
	"net/http"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// counter reads zerolock_http_requests_total for route and outcome.
func counter(t *testing.T, route, outcome string) float64 {
	t.Helper()
	families, err := prom.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "zerolock_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] == route && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func histogramCount(t *testing.T, route string) uint64 {
	t.Helper()
	families, _ := prom.DefaultGatherer.Gather()
	for _, f := range families {
		if f.GetName() != "zerolock_http_lock_hold_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) == 1 && m.GetLabel()[0].GetValue() == route {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

func TestMetrics(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/metrics-test/:id", Keys: []string{"path:id", "header:X-User"},
	}}}, newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
		Method: http.MethodPost, Path: "/metrics-test/:id", Handler: func(w http.ResponseWriter, r *http.Request) {},
	}})
	const route = "POST /metrics-test/:id"
	before := map[string]float64{}
	for _, o := range []string{"acquired", "rejected", "bad_request"} {
		before[o] = counter(t, route, o)
	}
	holds := histogramCount(t, route)

	resttest.Do(t, http.MethodPost, base+"/metrics-test/1", "", "X-User", "u")
	resttest.Do(t, http.MethodPost, base+"/metrics-test/1", "", "X-User", "u")
	resttest.Do(t, http.MethodPost, base+"/metrics-test/1", "")

	for outcome, want := range map[string]float64{"acquired": 1, "rejected": 1, "bad_request": 1} {
		if got := counter(t, route, outcome) - before[outcome]; got != want {
			t.Errorf("outcome %s counted %v times, want %v", outcome, got, want)
		}
	}
	if got := histogramCount(t, route) - holds; got != 1 {
		t.Errorf("hold time observed %d times, want 1", got)
	}
}
