package redislock

// WithDeadlineGuard makes every call of the lock (AcquireCtx,
// AcquireWaitCtx, ReleaseCtx, TTL) return when its context ends, even on a
// store that would keep reading: go-redis clients do keep reading past a
// context's deadline unless made with ContextTimeoutEnabled, and go-zero's
// clients are never made with it, so on a stalled server a call returns only
// after the client's read timeout (3 s by default).
//
// A guarded call whose context can end runs in a goroutine of its own; when
// the context ends first, the call returns the context's error and the
// abandoned command finishes in the background with its outcome unknown, as
// after any error (an acquire that landed holds the key until it expires or
// this instance releases it). The hand-off between goroutines costs latency
// on every call (about 12 µs per call on the 2-core VM of docs/BENCHMARKS.md,
// a quarter of a lock cycle there), which is why it is not the default. A
// go-redis client with ContextTimeoutEnabled keeps deadlines by itself at no
// cost, and then only calls whose context has no deadline but can be
// cancelled take the goroutine.
func WithDeadlineGuard() Option {
	return func(o *options) {
		o.deadlineGuard = true
	}
}
