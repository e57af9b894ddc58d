// Package floor is the raw floor of a Redis lock, which the benchmarks
// measure zerolock against: SET key token NX PX, then an EVALSHA
// compare-and-delete, on one go-redis client. No correct lock sends less.
// It is shared by the benchmarks in redislock and interceptor and by the
// bench tool, so that all of them measure the same floor.
package floor

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// ErrTaken is Payments.Refund's error when the order's key was held.
var ErrTaken = errors.New("floor: key already held")

// Release is the compare-and-delete: it deletes KEYS[1] only while it
// holds ARGV[1]. Load it before measuring, as any lock would.
var Release = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then
    return redis.call("DEL", KEYS[1])
end
return 0`)

// Cycle takes key with token for ttl (SET NX PX) and, when that succeeded,
// releases it (EVALSHA of Release). It reports whether it took the key.
func Cycle(ctx context.Context, c *redis.Client, key, token string, ttl time.Duration) (bool, error) {
	ok, err := c.SetNX(ctx, key, token, ttl).Result()
	if err != nil || !ok {
		return false, err
	}
	return true, Release.EvalSha(ctx, c, []string{key}, token).Err()
}

// Payments serves the test Payments service for the interceptor's
// benchmarks: Pay does nothing (the interceptor guards it), Refund does the
// floor in its handler on Prefix + the order id, so the two calls differ
// only in who takes the lock.
type Payments struct {
	testpb.UnimplementedPaymentsServer
	Redis  *redis.Client
	Prefix string
	TTL    time.Duration
}

// Pay answers at once.
func (Payments) Pay(context.Context, *testpb.PayRequest) (*testpb.PayReply, error) {
	return &testpb.PayReply{Status: "paid"}, nil
}

// Refund runs one floor cycle on the order's key; ErrTaken when it was held.
func (p Payments) Refund(ctx context.Context, req *testpb.PayRequest) (*testpb.PayReply, error) {
	key := p.Prefix + req.GetOrder().GetId()
	ok, err := Cycle(ctx, p.Redis, key, key, p.TTL)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, ErrTaken
	}
	return &testpb.PayReply{Status: "refunded"}, nil
}
