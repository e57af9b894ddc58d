package zklock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock/zklock"
)

// TestWaitersQueueOrder queues five waiters one after another behind a
// holder (each confirmed in the queue before the next starts) and
// releases: they take the lock in queue order.
func TestWaitersQueueOrder(t *testing.T) {
	connA, connB := connect(t), connect(t)
	holder := zklock.New(connA, "queue", testRoot(t), zklock.WithExpiry(time.Minute))
	mustAcquire(t, holder)

	const n = 5
	order := make(chan int, n)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		conn := connA
		if i%2 == 1 {
			conn = connB
		}
		w := zklock.New(conn, "queue", testRoot(t), zklock.WithExpiry(time.Minute))
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ok, err := w.AcquireWaitCtx(ctx, 0)
			if err != nil || !ok {
				errs <- errors.Join(errors.New("waiter failed"), err)
				return
			}
			order <- i
			if _, err := w.Release(); err != nil {
				errs <- err
			}
		}()
		eventually(t, 10*time.Second, "waiter did not queue", func() bool { return queueLen(t, connA, holder) == i+2 })
	}
	if ok, err := holder.Release(); !ok || err != nil {
		t.Fatalf("release holder: %v, %v", ok, err)
	}
	for want := 0; want < n; want++ {
		select {
		case got := <-order:
			if got != want {
				t.Fatalf("waiter %d took the lock in turn %d", got, want)
			}
		case err := <-errs:
			t.Fatal(err)
		case <-time.After(30 * time.Second):
			t.Fatalf("turn %d: no waiter took the lock", want)
		}
	}
	eventually(t, 10*time.Second, "nodes left after the queue drained", func() bool { return queueLen(t, connA, holder) == 0 })
}

// TestWaiterGivesUp: a waiter whose wait limit or context ends leaves the
// queue and deletes its node.
func TestWaiterGivesUp(t *testing.T) {
	connA, connB := connect(t), connect(t)
	holder := zklock.New(connA, "busy", testRoot(t), zklock.WithExpiry(time.Minute))
	mustAcquire(t, holder)
	w := zklock.New(connB, "busy", testRoot(t), zklock.WithExpiry(time.Minute))

	if ok, err := w.AcquireWait(50 * time.Millisecond); ok || err != nil {
		t.Fatalf("wait past its limit: %v, %v; want false, nil", ok, err)
	}
	eventually(t, 10*time.Second, "a waiter past its limit left its node", func() bool { return queueLen(t, connA, holder) == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := w.AcquireWaitCtx(ctx, 0)
		done <- err
	}()
	eventually(t, 10*time.Second, "waiter did not queue", func() bool { return queueLen(t, connA, holder) == 2 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v, want context.Canceled", err)
	}
	eventually(t, 10*time.Second, "a cancelled waiter left its node", func() bool { return queueLen(t, connA, holder) == 1 })

	// The holder's release lets a fresh waiter in at once.
	if ok, err := holder.Release(); !ok || err != nil {
		t.Fatalf("release: %v, %v", ok, err)
	}
	waitAcquire(t, w)
}
