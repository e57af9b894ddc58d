package lockobs

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/zerolock/zerolock/internal/testing/obstest"
)

func TestWatchEvents(t *testing.T) {
	const name = "TestWatchEvents"
	in := For("redis", "mutex", name)
	ctx, request, rec := obstest.Recording(t, context.Background())
	read := func() map[string]float64 {
		return map[string]float64{
			"renewals":      testutil.ToFloat64(in.renewals),
			"renew_failed":  testutil.ToFloat64(in.renewFailed),
			"lost taken":    testutil.ToFloat64(lost.WithLabelValues(name, "redis", "mutex", "taken_over")),
			"lost deleted":  testutil.ToFloat64(lost.WithLabelValues(name, "redis", "mutex", "deleted")),
			"released gone": testutil.ToFloat64(in.releasedGone),
		}
	}
	before, holds := read(), samples(t, in.hold)
	w := in.StartWatch(ctx)
	w.Renewed()
	w.RenewFailed(errors.New("timeout"))
	w.Lost(TakenOver)
	in.Held(0)
	in.ReleasedGone()
	request.End()

	after := read()
	for what, want := range map[string]float64{"renewals": 1, "renew_failed": 1, "lost taken": 1, "lost deleted": 0, "released gone": 1} {
		if got := after[what] - before[what]; got != want {
			t.Errorf("%s went up by %v; want %v", what, got, want)
		}
	}
	if n := samples(t, in.hold) - holds; n != 1 {
		t.Errorf("hold_seconds has %d new samples; want 1", n)
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans; want the request span only", len(spans))
	}
	var events []string
	for _, e := range spans[0].Events() {
		events = append(events, e.Name)
	}
	if len(events) != 2 || events[0] != "zerolock.renew_failed" || events[1] != "zerolock.lock_lost" {
		t.Errorf("request span events %v; want [zerolock.renew_failed zerolock.lock_lost]", events)
	}
}
