package market

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestErrorsChangeNothing checks each error case of both markets at both
// granularities: the right sentinel, and the market left as it was.
func TestErrorsChangeNothing(t *testing.T) {
	ctx := context.Background()
	for _, impl := range implementations {
		for _, g := range granularities {
			t.Run(fmt.Sprintf("%s/%s", impl.name, g), func(t *testing.T) {
				client := newClient(t)
				keys := testKeys(t)
				seedUsers(t, client, keys,
					map[string]int64{"ann": 1000, "bob": 500},
					map[string][]string{"ann": {"lamp", "vase"}, "bob": {"rug"}})
				m := impl.new(client, keys, WithGranularity(g))
				if err := m.List(ctx, "ann", "lamp", 600); err != nil {
					t.Fatalf("List: %v", err)
				}
				before := snapshot(t, client, keys, "ann", "bob")

				for _, tc := range []struct {
					name string
					op   func() error
					want error
				}{
					{"list an item of another", func() error { return m.List(ctx, "bob", "vase", 100) }, ErrNotOwned},
					{"list a listed item", func() error { return m.List(ctx, "ann", "lamp", 100) }, ErrNotOwned},
					{"list at a price of 0", func() error { return m.List(ctx, "ann", "vase", 0) }, ErrInvalidPrice},
					{"buy one's own item", buyErr(m, "ann", "lamp", "ann"), ErrOwnItem},
					{"buy an unlisted item", buyErr(m, "ann", "rug", "bob"), ErrNotListed},
					{"buy from the wrong seller", buyErr(m, "ann", "lamp", "bob"), ErrNotListed},
					{"buy beyond one's funds", buyErr(m, "bob", "lamp", "ann"), ErrInsufficientFunds},
					{"buy as an unknown user", buyErr(m, "eve", "lamp", "ann"), ErrInsufficientFunds},
				} {
					if err := tc.op(); !errors.Is(err, tc.want) {
						t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
					}
					if after := snapshot(t, client, keys, "ann", "bob"); after != before {
						t.Errorf("%s changed the market:\n%s\nwas\n%s", tc.name, after, before)
					}
				}

				// The way it should go: bob can afford a cheaper vase.
				if err := m.List(ctx, "ann", "vase", 450); err != nil {
					t.Fatalf("List vase: %v", err)
				}
				price, err := m.Buy(ctx, "bob", "vase", "ann")
				if err != nil || price != 450 {
					t.Fatalf("Buy vase: %d, %v; want 450, nil", price, err)
				}
				want := "ann funds=1450 inventory=[]\nbob funds=50 inventory=[rug vase]\nlisted=[{600 lamp.ann}]"
				if got := snapshot(t, client, keys, "ann", "bob"); got != want {
					t.Fatalf("after the sale:\n%s\nwant\n%s", got, want)
				}
				if _, err := m.Buy(ctx, "ann", "vase", "ann"); !errors.Is(err, ErrOwnItem) {
					t.Fatalf("buying back one's own sold listing: %v", err)
				}
				if _, err := m.Buy(ctx, "eve", "vase", "ann"); !errors.Is(err, ErrNotListed) {
					t.Fatalf("buying a sold listing: %v, want ErrNotListed", err)
				}
			})
		}
	}
}

func buyErr(m Market, buyer, item, seller string) func() error {
	return func() error {
		_, err := m.Buy(context.Background(), buyer, item, seller)
		return err
	}
}
