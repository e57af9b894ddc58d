package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/zktest"
	"github.com/zerolock/zerolock/zklock"
)

// shortSession is the session timeout of connections whose session a test
// lets expire: four ticks, a second.
const shortSession = 4 * zktest.TickTime

// lostWithin waits up to d for ctx to end and checks its cause is
// ErrLockLost.
func lostWithin(t *testing.T, ctx context.Context, d time.Duration) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(d):
		t.Fatalf("no lost-lock signal within %v", d)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, zerolock.ErrLockLost) {
		t.Fatalf("cause: %v, want ErrLockLost", cause)
	}
}

// TestConnectionLossSignalled cuts the holder off from ZooKeeper: with the
// default settings Watch signals the loss as soon as the connection loses
// its session, the server then expires the session and another
// connection gets the lock, and the holder's Release, once it reconnects,
// answers false.
func TestConnectionLossSignalled(t *testing.T) {
	srv := zktest.Shared(t)
	proxy := faultproxy.Start(t, srv.Addr())
	holderConn := zktest.Connect(t, proxy.Addr(), shortSession)
	holder := zklock.New(holderConn, "cut", testRoot(t), zklock.WithExpiry(time.Minute))
	mustAcquire(t, holder)
	ctx := holder.Watch(context.Background())

	proxy.Cut()
	lostWithin(t, ctx, 20*time.Second)
	waitAcquire(t, zklock.New(connect(t), "cut", testRoot(t), zklock.WithExpiry(time.Minute)))

	proxy.Heal()
	zktest.WaitSession(t, holderConn)
	if ok, err := holder.Release(); ok || err != nil {
		t.Fatalf("release after the session expired: %v, %v; want false, nil", ok, err)
	}
}

// TestSessionExpirySignalled lets the holder's session expire while the
// watch tolerates a long disconnection: the signal then comes from the
// client learning, on reconnect, that its session expired.
func TestSessionExpirySignalled(t *testing.T) {
	srv := zktest.Shared(t)
	proxy := faultproxy.Start(t, srv.Addr())
	holderConn := zktest.Connect(t, proxy.Addr(), shortSession)
	holder := zklock.New(holderConn, "expire", testRoot(t), zklock.WithExpiry(time.Minute),
		zklock.WithSessionTimeout(time.Hour)) // the poll never calls it lost
	mustAcquire(t, holder)
	ctx := holder.Watch(context.Background())
	admin := connect(t)
	node := ownNode(t, admin, holder)

	proxy.Cut()
	eventually(t, 20*time.Second, "the cut holder's node outlived its session", func() bool {
		ok, _, err := admin.Exists(node)
		return err == nil && !ok
	})
	if ctx.Err() != nil {
		t.Fatalf("signalled before the client could know: %v", context.Cause(ctx))
	}
	proxy.Heal()
	lostWithin(t, ctx, 20*time.Second)
}

// TestDeletedNodeSignalled deletes the holder's node from another
// connection, as an operator would: Watch signals the loss.
func TestDeletedNodeSignalled(t *testing.T) {
	conn, admin := connect(t), connect(t)
	holder := zklock.New(conn, "deleted", testRoot(t), zklock.WithExpiry(time.Minute))
	mustAcquire(t, holder)
	ctx := holder.Watch(context.Background())
	if err := admin.Delete(ownNode(t, admin, holder), -1); err != nil {
		t.Fatal(err)
	}
	lostWithin(t, ctx, 20*time.Second)
	if ok, err := holder.Release(); ok || err != nil {
		t.Fatalf("release of a deleted lock: %v, %v; want false, nil", ok, err)
	}
}

// TestWatchOfUnheldLock: Watch before any acquire returns a context that
// is already over, with ErrLockLost.
func TestWatchOfUnheldLock(t *testing.T) {
	lock := zklock.New(connect(t), "unheld", testRoot(t))
	lostWithin(t, lock.Watch(context.Background()), time.Second)
}

// ownNode returns the path of the only node queued under lock's key.
func ownNode(t *testing.T, admin *zk.Conn, lock *zklock.Lock) string {
	t.Helper()
	children, _, err := admin.Children(lock.QueuePath())
	if err != nil || len(children) != 1 {
		t.Fatalf("queue of %s: %v, %v; want one node", lock.QueuePath(), children, err)
	}
	return lock.QueuePath() + "/" + children[0]
}
