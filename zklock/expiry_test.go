package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/zklock"
)

// TestUnwatchedLockExpires: a lock nobody watches is released by its
// timer after its expiry, so another connection gets it, and its own
// Release then answers false.
func TestUnwatchedLockExpires(t *testing.T) {
	connA, connB := connect(t), connect(t)
	a := zklock.New(connA, "window", testRoot(t), zklock.WithExpiry(200*time.Millisecond))
	mustAcquire(t, a)
	b := zklock.New(connB, "window", testRoot(t), zklock.WithExpiry(time.Minute))
	waitAcquire(t, b) // comes true only once a's node is gone
	if ok, err := a.Release(); ok || err != nil {
		t.Fatalf("release of an expired lock: %v, %v; want false, nil", ok, err)
	}
}

// TestWatchedLockDoesNotExpire acquires two locks with the same short
// expiry, watches one, and waits for the other to expire: the watched one
// is still held, and keeps its hold until released.
func TestWatchedLockDoesNotExpire(t *testing.T) {
	connA, connB := connect(t), connect(t)
	opts := []zklock.Option{testRoot(t), zklock.WithExpiry(200 * time.Millisecond)}
	watched := zklock.New(connA, "watched", opts...)
	clock := zklock.New(connA, "clock", opts...)
	mustAcquire(t, watched)
	ctx := watched.Watch(context.Background())
	mustAcquire(t, clock)
	waitAcquire(t, zklock.New(connB, "clock", testRoot(t), zklock.WithExpiry(time.Minute)))

	if ok, err := zklock.New(connB, "watched", opts...).Acquire(); ok || err != nil {
		t.Fatalf("contender of a watched lock past its expiry: %v, %v; want false, nil", ok, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("watch ended: %v", context.Cause(ctx))
	}
	if ok, err := watched.Release(); !ok || err != nil {
		t.Fatalf("release: %v, %v; want true, nil", ok, err)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, zerolock.ErrReleased) {
		t.Fatalf("watch cause after Release: %v, want ErrReleased", cause)
	}
}

// TestMaxHoldFallsBackToExpiry: after MaxHold the watch ends with
// ErrMaxHold and the expiry timer releases the lock.
func TestMaxHoldFallsBackToExpiry(t *testing.T) {
	connA, connB := connect(t), connect(t)
	a := zklock.New(connA, "bounded", testRoot(t), zklock.WithExpiry(100*time.Millisecond))
	mustAcquire(t, a)
	ctx := a.Watch(context.Background(), zerolock.MaxHold(100*time.Millisecond))
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("MaxHold did not end the watch")
	}
	if cause := context.Cause(ctx); !errors.Is(cause, zerolock.ErrMaxHold) {
		t.Fatalf("cause: %v, want ErrMaxHold", cause)
	}
	waitAcquire(t, zklock.New(connB, "bounded", testRoot(t), zklock.WithExpiry(time.Minute)))
}

// TestClosedHolderFreesLock: closing the holder's connection ends its
// session, and a waiter on another connection gets the lock.
func TestClosedHolderFreesLock(t *testing.T) {
	connA, connB := connect(t), connect(t)
	a := zklock.New(connA, "closed", testRoot(t), zklock.WithExpiry(time.Minute))
	mustAcquire(t, a)
	b := zklock.New(connB, "closed", testRoot(t), zklock.WithExpiry(time.Minute))
	waiting := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		ok, err := b.AcquireWaitCtx(ctx, 0)
		if err == nil && !ok {
			err = errors.New("wait ended without the lock")
		}
		waiting <- err
	}()
	eventually(t, 10*time.Second, "waiter did not queue", func() bool { return queueLen(t, connB, b) == 2 })
	connA.Close()
	if err := <-waiting; err != nil {
		t.Fatalf("waiter after the holder's connection closed: %v", err)
	}
}

// TestCancelledReleaseKeepsExpiry: a Release whose context already ended
// fails, stops the watch, and leaves the hold to its expiry timer.
func TestCancelledReleaseKeepsExpiry(t *testing.T) {
	connA, connB := connect(t), connect(t)
	a := zklock.New(connA, "cancelled", testRoot(t), zklock.WithExpiry(100*time.Millisecond))
	mustAcquire(t, a)
	watch := a.Watch(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := a.ReleaseCtx(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("release with a cancelled context: %v, want context.Canceled", err)
	}
	if cause := context.Cause(watch); !errors.Is(cause, zerolock.ErrReleased) {
		t.Fatalf("watch cause: %v, want ErrReleased", cause)
	}
	waitAcquire(t, zklock.New(connB, "cancelled", testRoot(t), zklock.WithExpiry(time.Minute)))
}
