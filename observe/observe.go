package observe

import "github.com/zerolock/zerolock/observe/internal/switches"

// SetMetrics turns the lock metrics on or off for the process (on by
// default; go-zero must also have enabled Prometheus).
func SetMetrics(on bool) { switches.MetricsOff.Store(!on) }

// SetTracing turns the lock spans and events on or off for the process (on
// by default; only under a recording span).
func SetTracing(on bool) { switches.TracingOff.Store(!on) }
