// Package obstest is the harness of the lock-metric and trace tests that
// etcdlock's and zklock's tests share: it reads package observe's lock
// metrics back from Prometheus's default registry, and runs the scenarios
// that are the same on both backends, each test keeping only what its
// backend does differently (how locks are made, how a waiter is seen
// queued, how a hold is lost).
//
//	var metrics = obstest.Backend{Label: "etcd", Prefix: "etcdlock"}
//
//	func TestObserveWait(t *testing.T) {
//		name := metrics.LockName(t)
//		holder, waiter := newLock(t, name), newLock(t, name)
//		metrics.Wait(t, ctx, name, holder, waiter, func() { waitQueued(t, holder, 2) })
//	}
package obstest
