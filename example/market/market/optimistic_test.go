package market

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestOptimisticRetryBound makes every attempt conflict, deterministically:
// a hook writes a watched key between the reads and EXEC. The operation
// must give up with ErrTooManyRetries after exactly 1+maxRetries attempts,
// count maxRetries retries, and change nothing.
func TestOptimisticRetryBound(t *testing.T) {
	ctx := context.Background()
	const maxRetries = 3
	for _, g := range granularities {
		t.Run(g.String(), func(t *testing.T) {
			client, other := newClient(t), newClient(t)
			keys := testKeys(t)
			seedUsers(t, client, keys, map[string]int64{"ann": 1000, "bob": 1000},
				map[string][]string{"ann": {"lamp", "vase"}})
			m := NewOptimistic(client, keys, WithGranularity(g), WithMaxRetries(maxRetries))
			if err := m.List(ctx, "ann", "lamp", 300); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, client, keys, "ann", "bob")

			// Buy watches bob's hash: touch it (another field) from another
			// connection, which aborts the EXEC of the watching one.
			attempts := 0
			m.beforeExec = func() {
				attempts++
				if err := other.HIncrBy(ctx, keys.User("bob"), "touched", 1).Err(); err != nil {
					t.Error(err)
				}
			}
			if _, err := m.Buy(ctx, "bob", "lamp", "ann"); !errors.Is(err, ErrTooManyRetries) {
				t.Fatalf("Buy under constant conflict: %v, want ErrTooManyRetries", err)
			}
			if attempts != 1+maxRetries || m.Stats().Buy.Retries != maxRetries {
				t.Fatalf("%d attempts, %d retries counted; want %d and %d",
					attempts, m.Stats().Buy.Retries, 1+maxRetries, maxRetries)
			}

			// List watches ann's inventory: add and remove a ghost item.
			attempts = 0
			m.beforeExec = func() {
				attempts++
				other.SAdd(ctx, keys.Inventory("ann"), "ghost")
				other.SRem(ctx, keys.Inventory("ann"), "ghost")
			}
			if err := m.List(ctx, "ann", "vase", 100); !errors.Is(err, ErrTooManyRetries) {
				t.Fatalf("List under constant conflict: %v, want ErrTooManyRetries", err)
			}
			if attempts != 1+maxRetries || m.Stats().List.Retries != maxRetries {
				t.Fatalf("%d attempts, %d retries counted; want %d and %d",
					attempts, m.Stats().List.Retries, 1+maxRetries, maxRetries)
			}
			if after := snapshot(t, client, keys, "ann", "bob"); after != before {
				t.Fatalf("aborted operations changed the market:\n%s\nwas\n%s", after, before)
			}

			// One conflict, then none: the retry succeeds on what it reads
			// again, here a price changed meanwhile by a relisting.
			attempts = 0
			m.beforeExec = func() {
				attempts++
				if attempts == 1 {
					other.ZAdd(ctx, keys.Listings(), redisZ(250, Listing("lamp", "ann")))
					other.Incr(ctx, keys.Item("lamp"))
				}
			}
			price, err := m.Buy(ctx, "bob", "lamp", "ann")
			if err != nil || price != 250 {
				t.Fatalf("Buy after one conflict: %d, %v; want the new price 250", price, err)
			}
			if attempts != 2 || m.Stats().Buy.Retries != maxRetries+1 {
				t.Fatalf("%d attempts, %d retries in all; want 2 and %d", attempts, m.Stats().Buy.Retries, maxRetries+1)
			}
		})
	}
}

// TestOptimisticNoRetry checks that WithMaxRetries(0) makes one attempt.
func TestOptimisticNoRetry(t *testing.T) {
	ctx := context.Background()
	client, other := newClient(t), newClient(t)
	keys := testKeys(t)
	seedUsers(t, client, keys, nil, map[string][]string{"ann": {"lamp"}})
	m := NewOptimistic(client, keys, WithMaxRetries(-1))
	attempts := 0
	m.beforeExec = func() {
		attempts++
		other.SAdd(ctx, keys.Inventory("ann"), fmt.Sprint("ghost", attempts))
	}
	if err := m.List(ctx, "ann", "lamp", 100); !errors.Is(err, ErrTooManyRetries) || attempts != 1 {
		t.Fatalf("List: %v after %d attempts; want ErrTooManyRetries after 1", err, attempts)
	}
}

func redisZ(score float64, member string) redis.Z {
	return redis.Z{Score: score, Member: member}
}
