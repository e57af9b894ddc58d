package market

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestWorkloadKeepsInvariants runs buyers and sellers concurrently on both
// markets at both granularities, on one hot item and on items spread out,
// and checks every invariant afterwards.
func TestWorkloadKeepsInvariants(t *testing.T) {
	ctx := context.Background()
	for _, impl := range implementations {
		for _, g := range granularities {
			for _, shape := range []struct {
				name                   string
				buyers, sellers, items int
			}{{"hot", 8, 2, 1}, {"spread", 6, 3, 40}} {
				t.Run(fmt.Sprintf("%s/%s/%s", impl.name, g, shape.name), func(t *testing.T) {
					client := newClient(t)
					w := Workload{Keys: testKeys(t), Buyers: shape.buyers, Sellers: shape.sellers,
						Items: shape.items, Duration: 400 * time.Millisecond}
					if err := w.Seed(ctx, client); err != nil {
						t.Fatal(err)
					}
					m := impl.new(client, w.Keys, WithGranularity(g))
					res, err := w.Run(ctx, client, m)
					if err != nil {
						t.Fatal(err)
					}
					checks, err := w.CheckInvariants(ctx, client, res.Ledger)
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range checks {
						if !c.OK || c.Skipped {
							t.Errorf("invariant %q: ok=%v skipped=%v: %s", c.Name, c.OK, c.Skipped, c.Detail)
						}
					}
					if res.Trades == 0 || res.Lists < res.Trades {
						t.Errorf("%d trades for %d listings: want some trades, each of a listing", res.Trades, res.Lists)
					}
					if int64(len(res.BuyLatency)) != res.Trades {
						t.Errorf("%d trade latencies for %d trades", len(res.BuyLatency), res.Trades)
					}
					for reason, n := range res.Failures {
						if reason != "buy: not listed" {
							t.Errorf("%d failures %q: only buyers losing a race are expected", n, reason)
						}
					}
					t.Logf("%d trades, %d listings, stats %+v, failures %v", res.Trades, res.Lists, res.Stats, res.Failures)
				})
			}
		}
	}
}

// TestCheckInvariantsCatches breaks a quiet market in the ways the checks
// exist for, and expects the matching check to fail.
func TestCheckInvariantsCatches(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		check string
		// breakIt corrupts the market, or the ledger, after a clean run.
		breakIt func(w Workload, c redisCmd, l *Ledger)
	}{
		{"funds conserved", func(w Workload, c redisCmd, _ *Ledger) {
			c.HIncrBy(ctx, w.Keys.User("u0"), FundsField, 1)
		}},
		{"no overdraft", func(w Workload, c redisCmd, _ *Ledger) {
			c.HIncrBy(ctx, w.Keys.User("u0"), FundsField, -2*w.StartFunds)
			c.HIncrBy(ctx, w.Keys.User("u1"), FundsField, 2*w.StartFunds)
		}},
		{"every item exactly once", func(w Workload, c redisCmd, _ *Ledger) {
			c.SAdd(ctx, w.Keys.Inventory("u1"), "i0") // i0 starts with u0
		}},
		{"every item exactly once", func(w Workload, c redisCmd, _ *Ledger) {
			c.SRem(ctx, w.Keys.Inventory("u0"), "i0")
		}},
		{"no listing sold twice", func(_ Workload, _ redisCmd, l *Ledger) {
			l.Sales["i0"]++
		}},
		{"funds match the trades", func(_ Workload, _ redisCmd, l *Ledger) {
			l.Funds["u0"] += 5
			l.Funds["u1"] -= 5
		}},
	} {
		t.Run(tc.check, func(t *testing.T) {
			client := newClient(t)
			w := Workload{Keys: testKeys(t), Buyers: 2, Sellers: 2, Items: 4, Duration: time.Millisecond}.withDefaults()
			if err := w.Seed(ctx, client); err != nil {
				t.Fatal(err)
			}
			ledger := NewLedger()
			checks, err := w.CheckInvariants(ctx, client, ledger)
			if err != nil || !AllOK(checks) {
				t.Fatalf("fresh market: %v, %+v", err, checks)
			}
			tc.breakIt(w, client, ledger)
			if checks, err = w.CheckInvariants(ctx, client, ledger); err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				if c.Name == tc.check && !c.OK {
					return
				}
			}
			t.Fatalf("check %q held on a broken market: %+v", tc.check, checks)
		})
	}
}

// TestUnknownOutcomeSkipsLedgerChecks: after an operation of unknown
// outcome the ledger-based checks are skipped, not failed or passed.
func TestUnknownOutcomeSkipsLedgerChecks(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	w := Workload{Keys: testKeys(t), Buyers: 1, Sellers: 1, Items: 2, Duration: time.Millisecond}
	if err := w.Seed(ctx, client); err != nil {
		t.Fatal(err)
	}
	ledger := NewLedger()
	ledger.unknown()
	ledger.Sales["i0"] = 7
	checks, err := w.CheckInvariants(ctx, client, ledger)
	if err != nil {
		t.Fatal(err)
	}
	skipped := 0
	for _, c := range checks {
		if c.Skipped {
			skipped++
		}
	}
	if skipped != 2 || !AllOK(checks) {
		t.Fatalf("checks %+v: want the two ledger checks skipped, the rest ok", checks)
	}
}

func TestWorkloadValidates(t *testing.T) {
	for _, w := range []Workload{
		{Buyers: 0, Sellers: 1, Items: 1, Duration: time.Second},
		{Buyers: 1, Sellers: 0, Items: 1, Duration: time.Second},
		{Buyers: 1, Sellers: 1, Items: 0, Duration: time.Second},
		{Buyers: 1, Sellers: 1, Items: 1},
		{Buyers: 1, Sellers: 1, Items: 1, Duration: time.Second, MinPrice: 10, MaxPrice: 5},
	} {
		if _, err := w.Run(context.Background(), nil, nil); err == nil {
			t.Errorf("Run accepted %+v", w)
		}
	}
}
