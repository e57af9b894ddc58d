// Package observe is zerolock's metrics and traces at the lock level: what
// every backend reports about its locks, so that an operator sees whether
// requests wait on a lock, which lock is hot, and whether watchdogs lose
// locks.
//
// Metrics go to Prometheus's default registry, the one go-zero's
// core/metric registers with, so they appear on the service's existing
// /metrics endpoint (go-zero's DevServer); like go-zero's own, they are
// recorded only once go-zero has enabled Prometheus. They are:
//
//	zerolock_lock_acquisitions_total{name,backend,kind,outcome}  acquired, busy, error, timeout
//	zerolock_lock_wait_seconds{name,backend,kind}                 waiting acquires, won or not
//	zerolock_lock_hold_seconds{name,backend,kind}                 from acquire to release
//	zerolock_lock_renewals_total{name,backend,kind}               watchdog renewals
//	zerolock_lock_renew_failures_total{name,backend,kind}         renewals that failed
//	zerolock_lock_lost_total{name,backend,kind,cause}             deleted, taken_over, renew_failed, max_hold
//	zerolock_lock_release_gone_total{name,backend,kind}           releases that found the lock gone
//
// They use the Prometheus client directly rather than go-zero's
// core/metric, whose every observation allocates its label slice (even
// with Prometheus off): here a lock name's label values are bound once,
// and an observation costs a few nanoseconds and no allocation.
//
// The name label is the lock's name (redislock.WithName, and the rule's
// route or method for the middleware and the interceptor), never its key:
// keys are unbounded. A lock without a name reports "unnamed", and past
// MaxNames distinct backend, kind and name triples a process reports the
// rest as "other".
//
// Traces go through the OpenTelemetry tracer provider of the request's
// span (go-zero's core/trace sets it up): each acquire under a recording
// span gets a child span "zerolock.acquire" with the lock's name, backend,
// kind, outcome, wait time and fencing token, and a watched lock adds an
// event to the span Watch was called under when it is lost or a renewal
// fails. Without a recording span (tracing off, or not sampled) nothing is
// started and nothing allocated. The span's attributes are
// zerolock.lock.name, .backend, .kind, .outcome, .wait_ms and .fence; the
// events are zerolock.lock_lost (with zerolock.lock.cause) and
// zerolock.renew_failed (with zerolock.lock.error), on the span Watch was
// called under, if it is still recording then.
//
// A backend reports through For, once per lock:
//
//	in := observe.For("redis", "mutex", name) // when the lock is made
//	ctx, a := in.StartAcquire(ctx, false)     // around each acquire
//	ok, err := acquire(ctx)
//	a.End(outcome(ok, err), fence, err)
//
// Both are on by default; SetMetrics(false) and SetTracing(false) turn them
// off for the process.
package observe
