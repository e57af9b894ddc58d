package market

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A Check is one invariant checked at the end of a run.
type Check struct {
	// Name says what must hold.
	Name string
	// OK is false when it does not.
	OK bool
	// Skipped is true when the check could not be made (it is then OK):
	// the ledger is inexact after operations of unknown outcome.
	Skipped bool
	// Detail gives the figures, or the first offenders.
	Detail string
}

// AllOK reports whether every check held.
func AllOK(checks []Check) bool {
	for _, c := range checks {
		if !c.OK {
			return false
		}
	}
	return true
}

// CheckInvariants compares the market in client, after w ran on it, with
// w's start and with ledger (the Result's), and returns one Check per
// invariant:
//
//   - funds conserved: the users' funds add up to what they started with;
//   - no overdraft: no user's funds are negative;
//   - every item exactly once: each item is in exactly one inventory or
//     listing, and nothing else is;
//   - no listing sold twice: for each item, sales = listings - (1 if it is
//     listed now), which a sale of one listing to two buyers breaks;
//   - funds match the trades: each user's funds are its start plus what it
//     sold minus what it bought, as the market reported.
//
// It returns an error when Redis cannot be read.
func (w Workload) CheckInvariants(ctx context.Context, client redis.UniversalClient, ledger *Ledger) ([]Check, error) {
	w = w.withDefaults()
	users := w.Users()
	funds, err := readFunds(ctx, client, w.Keys, users)
	if err != nil {
		return nil, err
	}
	where, err := readItems(ctx, client, w.Keys, users)
	if err != nil {
		return nil, err
	}
	return []Check{
		checkConserved(funds, users, w.StartFunds),
		checkOverdraft(funds, users),
		checkItems(where, w.ItemIDs()),
		checkSales(where, w.ItemIDs(), ledger),
		checkLedgerFunds(funds, users, w.StartFunds, ledger),
	}, nil
}

func readFunds(ctx context.Context, client redis.UniversalClient, keys Keys, users []string) (map[string]int64, error) {
	cmds := make([]*redis.StringCmd, len(users))
	_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, u := range users {
			cmds[i] = p.HGet(ctx, keys.User(u), FundsField)
		}
		return nil
	})
	if err != nil && err != redis.Nil {
		return nil, fmt.Errorf("market: read funds: %w", err)
	}
	funds := make(map[string]int64, len(users))
	for i, u := range users {
		n, err := cmds[i].Int64()
		if err != nil && err != redis.Nil {
			return nil, fmt.Errorf("market: funds of %s: %w", u, err)
		}
		funds[u] = n
	}
	return funds, nil
}

// readItems returns, for every member of every inventory and of the
// listings, where it is: "inventory:<user>" or "listed:<seller>", or
// "listing:<member>" for a listing without a dot.
func readItems(ctx context.Context, client redis.UniversalClient, keys Keys, users []string) (map[string][]string, error) {
	cmds := make([]*redis.StringSliceCmd, len(users))
	var listed *redis.StringSliceCmd
	_, err := client.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, u := range users {
			cmds[i] = p.SMembers(ctx, keys.Inventory(u))
		}
		listed = p.ZRange(ctx, keys.Listings(), 0, -1)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("market: read items: %w", err)
	}
	where := map[string][]string{}
	for i, u := range users {
		for _, item := range cmds[i].Val() {
			where[item] = append(where[item], "inventory:"+u)
		}
	}
	for _, member := range listed.Val() {
		item, seller, ok := ParseListing(member)
		if !ok {
			where[member] = append(where[member], "listing:"+member)
			continue
		}
		where[item] = append(where[item], "listed:"+seller)
	}
	return where, nil
}

func checkConserved(funds map[string]int64, users []string, start int64) Check {
	var sum int64
	for _, u := range users {
		sum += funds[u]
	}
	want := start * int64(len(users))
	return Check{Name: "funds conserved", OK: sum == want,
		Detail: fmt.Sprintf("sum %d cents, started with %d", sum, want)}
}

func checkOverdraft(funds map[string]int64, users []string) Check {
	var bad []string
	for _, u := range users {
		if funds[u] < 0 {
			bad = append(bad, fmt.Sprintf("%s=%d", u, funds[u]))
		}
	}
	return Check{Name: "no overdraft", OK: len(bad) == 0, Detail: offenders(bad, "no user below 0")}
}

func checkItems(where map[string][]string, items []string) Check {
	var bad []string
	known := make(map[string]bool, len(items))
	for _, item := range items {
		known[item] = true
		switch n := len(where[item]); {
		case n == 0:
			bad = append(bad, item+" lost")
		case n > 1:
			bad = append(bad, fmt.Sprintf("%s in %s", item, strings.Join(where[item], ", ")))
		}
	}
	for item := range where {
		if !known[item] {
			bad = append(bad, fmt.Sprintf("unknown %s in %s", item, strings.Join(where[item], ", ")))
		}
	}
	sort.Strings(bad)
	return Check{Name: "every item exactly once", OK: len(bad) == 0,
		Detail: offenders(bad, fmt.Sprintf("%d items, each in one inventory or listing", len(items)))}
}

func checkSales(where map[string][]string, items []string, ledger *Ledger) Check {
	c := Check{Name: "no listing sold twice"}
	if ledger.Unknown > 0 {
		return skipped(c, ledger)
	}
	var bad []string
	var sales int64
	for _, item := range items {
		listedNow := int64(0)
		for _, place := range where[item] {
			if strings.HasPrefix(place, "listed:") {
				listedNow++
			}
		}
		sales += ledger.Sales[item]
		if want := ledger.Lists[item] - listedNow; ledger.Sales[item] != want {
			bad = append(bad, fmt.Sprintf("%s sold %d times for %d listings ended", item, ledger.Sales[item], want))
		}
	}
	c.OK, c.Detail = len(bad) == 0, offenders(bad, fmt.Sprintf("%d sales, each of a listing sold once", sales))
	return c
}

func checkLedgerFunds(funds map[string]int64, users []string, start int64, ledger *Ledger) Check {
	c := Check{Name: "funds match the trades"}
	if ledger.Unknown > 0 {
		return skipped(c, ledger)
	}
	var bad []string
	for _, u := range users {
		if want := start + ledger.Funds[u]; funds[u] != want {
			bad = append(bad, fmt.Sprintf("%s has %d, trades say %d", u, funds[u], want))
		}
	}
	c.OK, c.Detail = len(bad) == 0, offenders(bad, fmt.Sprintf("%d users' funds as their trades say", len(users)))
	return c
}

func skipped(c Check, ledger *Ledger) Check {
	c.OK, c.Skipped = true, true
	c.Detail = fmt.Sprintf("skipped: %d operations of unknown outcome", ledger.Unknown)
	return c
}

// offenders shows up to five offenders, or ok when there are none.
func offenders(bad []string, ok string) string {
	switch {
	case len(bad) == 0:
		return ok
	case len(bad) > 5:
		return fmt.Sprintf("%s and %d more", strings.Join(bad[:5], "; "), len(bad)-5)
	}
	return strings.Join(bad, "; ")
}
