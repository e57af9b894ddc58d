// Package etcdlock is a lock on etcd behind zerolock's lock interfaces
// (zerolock.Locker and zerolock.Waiter), so the REST middleware and the
// gRPC interceptor run on etcd as they run on Redis. It is built on the
// etcd client's concurrency package.
//
//	lock := etcdlock.New(client, "order:42", etcdlock.WithExpiry(5*time.Second))
//	ok, err := lock.AcquireCtx(ctx) // try once; AcquireWaitCtx queues
//	if err != nil {
//		return err // etcd failed
//	}
//	if !ok {
//		return errBusy // somebody else holds it
//	}
//	defer lock.ReleaseCtx(context.WithoutCancel(ctx))
//
// and for the middleware:
//
//	m, err := middleware.NewLockMiddlewareWithBackend(c.Lock, etcdlock.NewBackend(client))
//
// The semantics are the Redis lock's: "not acquired" and "not held" are
// (false, nil) and only a real failure is an error, and a lock lives its
// expiry unless released first, so the middleware's window mode works the
// same. Each acquisition takes a lease of its own whose TTL is the expiry
// rounded up to whole seconds (etcd's granularity; at least one second) and
// does not keep it alive: the lock expires by itself unless Watch renews
// it. Waiters queue in etcd's revision order, first come, first served, and
// a waiter that gives up leaves the queue. The fencing token is the lock
// key's create revision, etcd's own ordering.
//
// etcd raises a lease TTL below its minimum, one and a half election
// timeouts rounded up to whole seconds (2 s with etcd's default flags), to
// that minimum: on such a cluster, a lock with an expiry of one second or
// less lives two.
//
// Each Lock reports its acquires, waits, holds, renewals and losses to
// package observe (Prometheus metrics and spans under the caller's span)
// as backend "etcd", under the name WithName gives it: the Backend passes
// the middleware's route or the interceptor's method. A waiting acquire
// that its context's deadline ends counts as a timeout, as one whose wait
// limit passed; one whose context is cancelled, as an error.
package etcdlock
