package market

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Users returns the ids of the workload's users: "u0" to "u<n-1>", where n
// is the larger of Buyers and Sellers.
func (w Workload) Users() []string {
	return ids("u", max(w.Buyers, w.Sellers))
}

// ItemIDs returns the ids of the workload's items: "i0" to "i<Items-1>".
func (w Workload) ItemIDs() []string {
	return ids("i", w.Items)
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// Seed deletes every key under w.Keys (SCAN and DEL: the server may hold
// other data) and creates the workload's market: every user with
// StartFunds, item i in the inventory of user i mod len(Users), nothing
// listed.
func (w Workload) Seed(ctx context.Context, client redis.UniversalClient) error {
	w = w.withDefaults()
	iter := client.Scan(ctx, 0, w.Keys.Pattern(), 1000).Iterator()
	var stale []string
	for iter.Next(ctx) {
		stale = append(stale, iter.Val())
	}
	if err := iter.Err(); err != nil {
		return fmt.Errorf("market: seed: scan: %w", err)
	}
	users := w.Users()
	_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for start := 0; start < len(stale); start += 1000 {
			p.Del(ctx, stale[start:min(start+1000, len(stale))]...)
		}
		for _, u := range users {
			p.HSet(ctx, w.Keys.User(u), FundsField, w.StartFunds)
		}
		for i, item := range w.ItemIDs() {
			p.SAdd(ctx, w.Keys.Inventory(users[i%len(users)]), item)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("market: seed: %w", err)
	}
	return nil
}
