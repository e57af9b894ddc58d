// Package zklock is a lock on ZooKeeper behind zerolock's lock interfaces
// (zerolock.Locker, zerolock.Waiter, zerolock.Backend), so the REST
// middleware and the gRPC interceptor can take their locks from ZooKeeper
// instead of Redis.
//
//	conn, _, err := zk.Connect([]string{"127.0.0.1:2181"}, 10*time.Second)
//	...
//	lock := zklock.New(conn, "order:42", zklock.WithExpiry(5*time.Second))
//	ok, err := lock.AcquireWaitCtx(ctx, time.Second)
//	if ok {
//		defer lock.Release()
//		...
//	}
//
// or, for the middleware:
//
//	m, err := middleware.NewLockMiddlewareWithBackend(conf, zklock.NewBackend(conn))
//
// # The recipe
//
// Each acquire creates an ephemeral sequential node, <root>/<key>/…lock-N,
// with the client's protected create (a create whose answer was lost to a
// dropped connection is found again, not repeated). The lowest node holds
// the lock. AcquireCtx is a try-lock: a node that is not the lowest is
// deleted at once and the answer is false. AcquireWaitCtx keeps its node
// in the queue and watches only the node just before its own, so a
// release wakes one waiter (no herd effect) and waiters are served in
// queue order.
//
// The key's parent node is persistent and never deleted (no container
// nodes), so the parent's sequence numbers never restart and Fence, the
// node's sequence number plus one, strictly increases over the successive
// holders of a key. The price is one empty node per distinct key ever
// locked; keys built from request fields (an order id) accumulate, and an
// operator may delete old empty parents only if no fencing token of them
// is still in use. Keys are escaped into one node name each: bytes outside
// [A-Za-z0-9_:-] become %XX.
//
// # Expiry
//
// Ephemeral nodes have no TTL: a node lives as long as the session that
// created it. So a Lock that is held and not watched deletes its own node
// when its expiry (WithExpiry, or the LockerOptions' Expiry) passes, with a
// timer in this process; the middleware's window mode relies on it. If
// the process dies, its session times out on the server and the node goes
// with it: the lock is then free after the session timeout, whatever the
// expiry. Watch stops the timer until Release, the lock's loss, MaxHold or
// the end of Watch's context; after all but Release the timer starts again
// with the full expiry. The timer runs on this process's clock only:
// another process cannot tell how long a holder has left, so Lock has no
// TTL method.
//
// # Loss
//
// Watch's context ends with zerolock.ErrLockLost when the node is deleted
// by someone else, the session expires or is closed, or the connection has
// lost its session for longer than WithSessionTimeout allows. A holder cut
// off from ZooKeeper cannot know when the server expires its session, so
// the signal is a best effort bound, not a guarantee: pass Fence to storage
// that rejects stale tokens when that matters.
//
// Each Lock reports its acquires, waits, holds and losses to package
// observe (Prometheus metrics and spans under the caller's span) as
// backend "zookeeper", under the name WithName gives it: the Backend
// passes the middleware's route or the interceptor's method. A waiting
// acquire that its context's deadline ends counts as a timeout, as one
// whose wait limit passed; one whose context is cancelled, or that
// ZooKeeper failed, as an error.
//
// Connections come from github.com/go-zookeeper/zk, which logs to the
// standard logger unless given zk.WithLogger.
package zklock
