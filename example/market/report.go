package main

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/zerolock/zerolock/example/market/market"
)

// writeReport prints what a run did and the invariants checked after it.
func writeReport(out io.Writer, c config, desc string, res *market.Result, checks []market.Check) {
	w := c.workload
	fmt.Fprintf(out, "market: %s, %s grain, %d buyers, %d sellers, %d items, %v on %s\n",
		c.mode, c.grain, w.Buyers, w.Sellers, w.Items, w.Duration, desc)
	fmt.Fprintf(out, "trades:    %d in %v: %.0f trades/s\n", res.Trades, res.Elapsed.Round(time.Millisecond), res.TradesPerSecond())
	fmt.Fprintf(out, "listings:  %d: %.0f listings/s\n", res.Lists, float64(res.Lists)/res.Elapsed.Seconds())
	st := res.Stats
	if c.mode == "optimistic" {
		fmt.Fprintf(out, "retries:   %.2f per trade (%d), %.2f per listing (%d)\n",
			per(st.Buy.Retries, res.Trades), st.Buy.Retries, per(st.List.Retries, res.Lists), st.List.Retries)
	} else {
		fmt.Fprintf(out, "waits:     %.2f per trade (%d, %v waiting), %.2f per listing (%d, %v waiting); locks expired while held: %d\n",
			per(st.Buy.Waits, res.Trades), st.Buy.Waits, st.Buy.WaitTime.Round(time.Millisecond),
			per(st.List.Waits, res.Lists), st.List.Waits, st.List.WaitTime.Round(time.Millisecond), st.LocksLost)
	}
	fmt.Fprintf(out, "latency:   trade p50 %v p99 %v; listing p50 %v p99 %v\n",
		round(res.BuyLatency.Percentile(50)), round(res.BuyLatency.Percentile(99)),
		round(res.ListLatency.Percentile(50)), round(res.ListLatency.Percentile(99)))
	reasons := make([]string, 0, len(res.Failures))
	for r := range res.Failures {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	fmt.Fprintf(out, "failures:")
	if len(reasons) == 0 {
		fmt.Fprintf(out, " none")
	}
	for _, r := range reasons {
		fmt.Fprintf(out, " [%s: %d]", r, res.Failures[r])
	}
	fmt.Fprintln(out)
	for _, ch := range checks {
		status := "ok"
		switch {
		case ch.Skipped:
			status = "skipped"
		case !ch.OK:
			status = "FAILED"
		}
		fmt.Fprintf(out, "invariant: %-24s %-7s %s\n", ch.Name, status, ch.Detail)
	}
	if market.AllOK(checks) {
		fmt.Fprintln(out, "invariants: ok")
	} else {
		fmt.Fprintln(out, "invariants: FAILED")
	}
}

func per(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return float64(n) / float64(of)
}

func round(d time.Duration) time.Duration {
	return d.Round(time.Microsecond)
}
