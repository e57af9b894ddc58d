package redislock

import "time"

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
	n := nativeReleaseFor(store)
	if n == nil {
		return "none"
	}
	return [...]string{"unknown", "script", "delifeq", "delex"}[n.command.Load()]
}

// AskNativeAgain makes store's next quiet release ask the server again, as
// it does once nativeRecheck has passed.
func AskNativeAgain(store Store) {
	if n := nativeReleaseFor(store); n != nil {
		n.askAfter.Store(0)
	}
}
