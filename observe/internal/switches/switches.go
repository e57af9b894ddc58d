// Package switches holds the process-wide switches of zerolock's lock
// metrics and traces: package observe sets them (SetMetrics, SetTracing)
// and package observe/lockobs reads them on every observation, without
// either package importing the other.
package switches

import "sync/atomic"

// MetricsOff and TracingOff are set when the lock metrics, or the lock
// spans and events, are turned off for the process; both are on by
// default, so the zero values mean on.
var (
	MetricsOff atomic.Bool
	TracingOff atomic.Bool
)
