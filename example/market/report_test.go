package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zerolock/zerolock/example/market/market"
)

// TestReportShowsFailedInvariants: a failed check is printed as FAILED,
// with its detail, and the summary line says so.
func TestReportShowsFailedInvariants(t *testing.T) {
	c := config{mode: "pessimistic", workload: market.Workload{Buyers: 1, Sellers: 1, Items: 1, Duration: time.Second}}
	res := &market.Result{Elapsed: time.Second, Trades: 3, Failures: map[string]int64{"buy: not listed": 2},
		Stats: market.Stats{Buy: market.OpStats{Waits: 6}}}
	checks := []market.Check{
		{Name: "funds conserved", OK: true, Detail: "fine"},
		{Name: "every item exactly once", OK: false, Detail: "i0 lost"},
	}
	var out bytes.Buffer
	writeReport(&out, c, "test", res, checks)
	for _, want := range []string{"3 trades/s", "2.00 per trade", "[buy: not listed: 2]",
		"FAILED  i0 lost", "invariants: FAILED"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report without %q:\n%s", want, out.String())
		}
	}
}
