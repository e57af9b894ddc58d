package guard

import (
	"errors"
	"time"

	"github.com/zeromicro/go-zero/core/metric"

	"github.com/zerolock/zerolock"
)

// Metrics are one transport's request counter and hold-time histogram,
// through go-zero's core/metric, so they are exported wherever the
// service's Prometheus or DevServer configuration exports go-zero's own.
type Metrics struct {
	requests metric.CounterVec
	hold     metric.HistogramVec
	lost     metric.CounterVec
}

// NewMetrics registers zerolock_<subsystem>_requests_total{<label>,outcome},
// zerolock_<subsystem>_lock_hold_seconds{<label>} and
// zerolock_<subsystem>_holds_lost_total{<label>,cause}. Call it once per
// subsystem (from a package variable): Prometheus refuses a second
// registration of a name.
func NewMetrics(subsystem, label string) *Metrics {
	return &Metrics{
		requests: metric.NewCounterVec(&metric.CounterVecOpts{
			Namespace: "zerolock",
			Subsystem: subsystem,
			Name:      "requests_total",
			Help:      "Requests matched by a lock rule, by " + label + " and outcome.",
			Labels:    []string{label, "outcome"},
		}),
		hold: metric.NewHistogramVec(&metric.HistogramVecOpts{
			Namespace: "zerolock",
			Subsystem: subsystem,
			Name:      "lock_hold_seconds",
			Help:      "How long the handler ran while holding the lock, by " + label + ".",
			Labels:    []string{label},
			Buckets:   []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		lost: metric.NewCounterVec(&metric.CounterVecOpts{
			Namespace: "zerolock",
			Subsystem: subsystem,
			Name:      "holds_lost_total",
			Help: "Holds that ended while their handler ran, by " + label + " and cause: max_hold (the handler " +
				"outlived MaxHold), lost, renew_failed.",
			Labels: []string{label, "cause"},
		}),
	}
}

// countLost counts a hold that ended, for cause, while its handler ran.
func (m *Metrics) countLost(label string, cause error) {
	if m == nil {
		return
	}
	why := "lost"
	switch {
	case errors.Is(cause, zerolock.ErrMaxHold):
		why = "max_hold"
	case errors.Is(cause, zerolock.ErrRenewFailed):
		why = "renew_failed"
	}
	m.lost.Inc(label, why)
}

func (m *Metrics) count(label string, outcome Outcome) {
	if m != nil {
		m.requests.Inc(label, string(outcome))
	}
}

func (m *Metrics) observeHold(label string, d time.Duration) {
	if m != nil {
		m.hold.ObserveFloat(d.Seconds(), label)
	}
}
