package market

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock/redislock"
)

// TestPessimisticLockTimeout holds the lock an operation needs: the
// operation must give up with ErrLockTimeout after its wait, count one
// wait, and change nothing.
func TestPessimisticLockTimeout(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		grain Granularity
		lock  string // the lock Buy and List of "lamp" need
	}{{PerItem, "item:lamp"}, {WholeMarket, "market"}} {
		t.Run(tc.grain.String(), func(t *testing.T) {
			client := newClient(t)
			keys := testKeys(t)
			seedUsers(t, client, keys, map[string]int64{"ann": 1000, "bob": 1000},
				map[string][]string{"ann": {"lamp"}})
			m := NewPessimistic(client, keys, WithGranularity(tc.grain), WithLockWait(50*time.Millisecond))
			if err := m.List(ctx, "ann", "lamp", 300); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, client, keys, "ann", "bob")
			holder := redislock.New(client, keys.Lock(tc.lock), redislock.WithExpiry(time.Minute))
			if ok, err := holder.AcquireCtx(ctx); !ok || err != nil {
				t.Fatalf("take the lock: %v, %v", ok, err)
			}
			t.Cleanup(func() { _, _ = holder.ReleaseCtx(context.Background()) })

			if _, err := m.Buy(ctx, "bob", "lamp", "ann"); !errors.Is(err, ErrLockTimeout) {
				t.Fatalf("Buy of a locked item: %v, want ErrLockTimeout", err)
			}
			if st := m.Stats(); st.Buy.Waits != 1 || st.Buy.WaitTime < 50*time.Millisecond {
				t.Fatalf("stats %+v: want one buy wait of at least 50ms", st)
			}
			if after := snapshot(t, client, keys, "ann", "bob"); after != before {
				t.Fatalf("a timed-out Buy changed the market:\n%s\nwas\n%s", after, before)
			}
		})
	}
}

// TestPessimisticWaitsForRelease starts a Buy while its item is locked,
// releases the lock once the Buy waits, and expects the Buy to go through.
func TestPessimisticWaitsForRelease(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	keys := testKeys(t)
	seedUsers(t, client, keys, map[string]int64{"ann": 0, "bob": 1000}, map[string][]string{"ann": {"lamp"}})
	m := NewPessimistic(client, keys, WithLockWait(time.Minute))
	if err := m.List(ctx, "ann", "lamp", 300); err != nil {
		t.Fatal(err)
	}
	holder := redislock.New(client, keys.Lock("item:lamp"), redislock.WithExpiry(time.Minute))
	if ok, err := holder.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("take the lock: %v, %v", ok, err)
	}
	type result struct {
		price int64
		err   error
	}
	done := make(chan result, 1)
	go func() {
		price, err := m.Buy(ctx, "bob", "lamp", "ann")
		done <- result{price, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for m.Stats().Buy.Waits == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Buy never waited for the lock")
		}
		select {
		case r := <-done:
			t.Fatalf("Buy returned while its item was locked: %d, %v", r.price, r.err)
		case <-time.After(time.Millisecond):
		}
	}
	if ok, err := holder.ReleaseCtx(ctx); !ok || err != nil {
		t.Fatalf("release: %v, %v", ok, err)
	}
	select {
	case r := <-done:
		if r.err != nil || r.price != 300 {
			t.Fatalf("Buy after the release: %d, %v; want 300, nil", r.price, r.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Buy still waiting 30s after the release")
	}
	if got := client.HGet(ctx, keys.User("ann"), FundsField).Val(); got != "300" {
		t.Fatalf("seller's funds %s, want 300", got)
	}
}

// TestPessimisticHoldsNothingWhileWaiting: a Buy whose buyer is locked
// waits without holding the item's lock (its MultiLock takes both or
// neither), so another operation can take the item meanwhile; once the
// buyer's lock is released the Buy goes through.
func TestPessimisticHoldsNothingWhileWaiting(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	keys := testKeys(t)
	seedUsers(t, client, keys, map[string]int64{"ann": 0, "bob": 1000}, map[string][]string{"ann": {"lamp"}})
	m := NewPessimistic(client, keys, WithLockWait(time.Minute))
	if err := m.List(ctx, "ann", "lamp", 300); err != nil {
		t.Fatal(err)
	}
	buyer := redislock.New(client, keys.Lock("user:bob"), redislock.WithExpiry(time.Minute))
	if ok, err := buyer.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("take the buyer's lock: %v, %v", ok, err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := m.Buy(ctx, "bob", "lamp", "ann")
		done <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for m.Stats().Buy.Waits == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Buy never waited for the buyer's lock")
		}
		time.Sleep(time.Millisecond)
	}
	item := redislock.New(client, keys.Lock("item:lamp"), redislock.WithExpiry(time.Minute))
	if ok, err := item.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("the item's lock while Buy waits for the buyer's: %v, %v; want it free", ok, err)
	}
	if ok, err := item.ReleaseCtx(ctx); !ok || err != nil {
		t.Fatalf("release the item's lock: %v, %v", ok, err)
	}
	if ok, err := buyer.ReleaseCtx(ctx); !ok || err != nil {
		t.Fatalf("release the buyer's lock: %v, %v", ok, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Buy after the release: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Buy still waiting 30s after the release")
	}
}
