package interceptor_test

import (
	"context"
	"testing"

	prom "github.com/prometheus/client_golang/prometheus"
	"github.com/zeromicro/go-zero/core/prometheus"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

func requests(t *testing.T, method, outcome string) float64 {
	t.Helper()
	families, err := prom.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "zerolock_grpc_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == method && labels["outcome"] == outcome {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestMetricsByMethodAndOutcome(t *testing.T) {
	prometheus.Enable()
	srv := redistest.Start(t)
	client := serve(t, payConf(interceptor.ModeWindow, "field:order.id"), newStore(srv), newPayments())
	before := map[string]float64{}
	for _, o := range []string{"acquired", "rejected", "bad_request"} {
		before[o] = requests(t, payMethod, o)
	}
	_, _ = client.Pay(context.Background(), order("M-1"))
	_, _ = client.Pay(context.Background(), order("M-1"))
	_, _ = client.Pay(context.Background(), order(""))
	for _, o := range []string{"acquired", "rejected", "bad_request"} {
		if got := requests(t, payMethod, o) - before[o]; got != 1 {
			t.Errorf("outcome %s counted %v times, want 1", o, got)
		}
	}
}
