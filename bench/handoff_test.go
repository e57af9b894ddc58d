package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// BenchmarkHandoff: 20 waiters on one key, each holding the lock about
// 1 ms: hand-offs per second for each contender, two interleaved rounds of
// 3 s each, all against the same redis-server in one run. It reports the
// best round of each and its ratio to zerolock. Run with -benchtime 1x.
//
// A hand-off passes the lock to another waiter: a holder that released
// queues again only after someone else got the lock. (Counting every
// acquisition instead would reward a library for letting the releaser
// grab its own lock back while the others sleep in their back-off.)
func BenchmarkHandoff(b *testing.B) {
	srv := redistest.Start(b)
	client := srv.Client(b)
	const (
		waiters = 20
		rounds  = 2
		round   = 3 * time.Second
	)
	best := make(map[string]float64)
	for r := 0; r < rounds; r++ {
		for i, c := range handoffContenders {
			key := fmt.Sprintf("bench:handoff:%d:%d", r, i)
			rate, err := handoffs(client, c, key, waiters, round)
			if err != nil {
				b.Fatalf("%s: %v", c.name, err)
			}
			best[c.name] = max(best[c.name], rate)
		}
	}
	base := best[handoffContenders[0].name]
	for _, c := range handoffContenders {
		b.Logf("%-26s %8.0f hand-offs/s   zerolock is %.1fx", c.name, best[c.name], base/best[c.name])
	}
	b.ReportMetric(base, "zerolock-handoffs/s")
	b.ReportMetric(base/best["bsm LinearBackoff(10ms)"], "x-bsm")
	b.ReportMetric(base/best["redsync defaults"], "x-redsync")
}
