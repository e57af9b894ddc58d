package redislock

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock/internal/deadline"
)

// Refresh is RefreshCtx with context.Background().
func (rl *RedisLock) Refresh() (bool, error) {
	return rl.RefreshCtx(context.Background())
}

// RefreshCtx extends the current hold to the lock's expiry (plus the
// tolerance, as an acquire sets it) only while this instance still holds
// the lock: a compare-and-pexpire (renew.lua), the one a Watch renews
// with. It reports false with a nil error when the lock was lost (the key
// expired, was deleted, or another holder has it) and never re-creates a
// vanished key. That is the difference from acquiring again, which would
// silently take a lock that another holder lost and regained in between.
//
// It returns ErrInvalidExpiry for a negative or empty expiry, and a
// wrapped store error when Redis cannot answer (errors.Is(err, ctx.Err())
// holds when the context ended), after which the hold's expiry may or may
// not have been extended.
func (rl *RedisLock) RefreshCtx(ctx context.Context) (bool, error) {
	px, err := rl.px()
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, rl.wrap(ctx, "refresh", err)
	}
	sent := monoNow()
	cmd, err := deadline.Within(ctx, rl.guard, func() *redis.Cmd {
		return rl.conn.Run(ctx, renewScript, rl.lockKeys(), rl.tokenArg(), px.Milliseconds())
	})
	var reply any
	if err == nil {
		reply, err = cmd.Result()
	}
	if err != nil {
		return false, rl.wrap(ctx, "refresh", err)
	}
	n, ok := reply.(int64)
	if !ok {
		return false, rl.wrap(ctx, "refresh", fmt.Errorf("%w: %v", ErrUnexpectedReply, reply))
	}
	if n != 1 {
		return false, nil
	}
	// A Watch started later counts its validity from this refresh.
	rl.noteAcquired(sent, px)
	return true, nil
}
