package market

import (
	"slices"
	"time"
)

// Latencies are the durations of completed operations, sorted.
type Latencies []time.Duration

// Percentile returns the duration that p percent of the operations did not
// exceed (nearest rank), or 0 when there were none.
func (l Latencies) Percentile(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	rank := int(float64(len(l))*p/100+0.999999) - 1
	return l[min(max(rank, 0), len(l)-1)]
}

func mergeLatencies(parts [][]time.Duration) Latencies {
	var all []time.Duration
	for _, p := range parts {
		all = append(all, p...)
	}
	slices.Sort(all)
	return all
}
