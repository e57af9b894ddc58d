// Package lockobs is the backend-facing side of package observe: what a
// lock backend calls from inside its locks to report acquires, holds,
// renewals and losses as zerolock's lock metrics and spans. Users never
// call it; they turn the metrics and traces off with observe.SetMetrics
// and observe.SetTracing, and package observe's comment lists what is
// reported.
//
// redislock, etcdlock and zklock report through it. It is public so that
// a backend outside this module, a zerolock.Backend of its own, reports
// the same series and spans as theirs.
//
// A backend gets a lock's Instruments once, when the lock is made, and
// observes each acquire from StartAcquire to End, or to EndWait for an
// acquire that may wait, and each watched hold from StartWatch:
//
//	in := lockobs.For("redis", "mutex", name) // when the lock is made
//
//	ctx, a := in.StartAcquire(ctx, false) // a try
//	ok, err := try(ctx)
//	a.End(lockobs.TryOutcome(ok, err), fence, err)
//
//	ctx, a = in.StartAcquire(ctx, true) // a waiting acquire
//	ok, err = wait(ctx, limit)
//	a.EndWait(ctx, ok, err, fence, lockobs.WaitErrors{})
//
// EndWait is the one place where a waiting acquire's answer becomes an
// outcome (a deadline that the caller chose is a timeout, not an error);
// WaitErrors names the backend's own errors it must tell apart.
//
// The metrics use the Prometheus client directly rather than go-zero's
// core/metric, whose every observation allocates its label slice (even
// with Prometheus off): For binds a lock name's label values once, and an
// observation costs a few nanoseconds and no allocation. Without a
// recording span nothing is started and nothing allocated.
package lockobs
