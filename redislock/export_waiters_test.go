package redislock

import (
	"time"

	"github.com/zerolock/zerolock/redislock/internal/native"
)

// WaiterFlag exposes waiterFlag to the external tests.
var WaiterFlag = waiterFlag

// WaiterFlagTTL is how long a waiting try's flag lives for a lock made
// WithBackoff(lo, hi).
func WaiterFlagTTL(lo, hi time.Duration) time.Duration {
	o := defaultOptions()
	WithBackoff(lo, hi)(&o)
	return waiterFlagTTL(o.wait)
}

// NativeReleaseOf names what store's quiet releases are known to use:
// "unknown", "script", "delifeq" or "delex"; "none" for a store that cannot
// send the command.
func NativeReleaseOf(store Store) string {
	n := native.For(wrapped(store))
	if n == nil {
		return "none"
	}
	return [...]string{"unknown", "script", "delifeq", "delex"}[n.Known()]
}

// AskNativeAgain makes store's next quiet release ask the server again, as
// it does once a minute has passed.
func AskNativeAgain(store Store) {
	if n := native.For(wrapped(store)); n != nil {
		n.AskAgain()
	}
}
