// Package observe is zerolock's metrics and traces at the lock level: what
// every backend reports about its locks, so that an operator sees whether
// requests wait on a lock, which lock is hot, and whether watchdogs lose
// locks.
//
// Both are on by default, and every backend of this module reports by
// itself: a user needs only SetMetrics and SetTracing, to turn them off for
// the process.
//
//	observe.SetMetrics(false) // no lock metrics, whatever go-zero's Prometheus says
//	observe.SetTracing(false) // no lock spans or events, even under a recording span
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
// The name label is the lock's name (redislock.WithName, and the rule's
// route or method for the middleware and the interceptor), never its key:
// keys are unbounded. A lock without a name reports "unnamed", and past
// 1000 distinct backend, kind and name triples (lockobs.MaxNames) a
// process reports the rest as "other".
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
// A backend reports through package observe/lockobs, which is for the
// authors of backends, in this module or outside it, not for their users.
package observe
