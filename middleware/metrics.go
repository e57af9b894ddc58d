package middleware

import (
	"time"

	"github.com/zeromicro/go-zero/core/metric"
)

// Outcomes counted by requestsTotal.
const (
	outcomeAcquired   = "acquired"
	outcomeRejected   = "rejected"
	outcomeBadRequest = "bad_request"
	outcomeStoreError = "store_error"
	outcomeFailOpen   = "fail_open"
)

// Metrics go through go-zero's core/metric, so they are exported wherever
// the service's Prometheus or DevServer configuration exports go-zero's own.
var (
	requestsTotal = metric.NewCounterVec(&metric.CounterVecOpts{
		Namespace: "zerolock",
		Subsystem: "http",
		Name:      "requests_total",
		Help:      "Requests matched by a lock rule, by route and outcome.",
		Labels:    []string{"route", "outcome"},
	})
	holdSeconds = metric.NewHistogramVec(&metric.HistogramVecOpts{
		Namespace: "zerolock",
		Subsystem: "http",
		Name:      "lock_hold_seconds",
		Help:      "How long the handler ran while holding the lock, by route.",
		Labels:    []string{"route"},
		Buckets:   []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	})
)

func observeHold(ru *rule, start time.Time) {
	holdSeconds.ObserveFloat(time.Since(start).Seconds(), ru.label)
}
