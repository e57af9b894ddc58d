package market

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// listedPrice reads the price of a listing, or ErrNotListed.
func listedPrice(ctx context.Context, c redis.Cmdable, keys Keys, member string) (int64, error) {
	score, err := c.ZScore(ctx, keys.Listings(), member).Result()
	if errors.Is(err, redis.Nil) {
		return 0, ErrNotListed
	}
	if err != nil {
		return 0, err
	}
	return int64(score), nil
}

// checkFunds returns ErrInsufficientFunds unless the user's funds cover
// price; a user without a hash has none.
func checkFunds(ctx context.Context, c redis.Cmdable, userKey string, price int64) error {
	funds, err := c.HGet(ctx, userKey, FundsField).Int64()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if funds < price {
		return ErrInsufficientFunds
	}
	return nil
}

// queueSale queues the updates of a sale, the same for both markets.
func queueSale(ctx context.Context, p redis.Pipeliner, keys Keys, buyer, item, seller string, price int64) {
	p.ZRem(ctx, keys.Listings(), Listing(item, seller))
	p.HIncrBy(ctx, keys.User(buyer), FundsField, -price)
	p.HIncrBy(ctx, keys.User(seller), FundsField, price)
	p.SAdd(ctx, keys.Inventory(buyer), item)
}

// queueListing queues the updates of a listing, the same for both markets.
func queueListing(ctx context.Context, p redis.Pipeliner, keys Keys, seller, item string, price int64) {
	p.SRem(ctx, keys.Inventory(seller), item)
	p.ZAdd(ctx, keys.Listings(), redis.Z{Score: float64(price), Member: Listing(item, seller)})
}
