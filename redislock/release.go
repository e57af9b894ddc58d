package redislock

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock/internal/native"
)

// sendRelease sends the lock's release: the server's compare-and-delete
// when the lock announces nothing and the server has one, else
// release.lua. Either is sent once on a go-redis client (see conn.OnceCmd).
// The command compares the token exactly, which is enough: a lock that
// announces nothing has a token no waiter marks (quietTokenEnd).
func (rl *RedisLock) sendRelease(ctx context.Context) (any, error) {
	if rl.more.native != nil {
		if c := rl.more.native.Current(ctx, &rl.conn); c != native.ByScript {
			reply, err := native.Send(ctx, &rl.conn, c, rl.Key(), rl.tokenArg())
			if err != nil && redis.HasErrorPrefix(err, "WRONGTYPE") {
				// The key holds another type: not ours, as release.lua
				// answers (go-zero's breaker has counted the error reply).
				return int64(0), nil
			}
			if !native.RefusedCommand(err) {
				return reply, err
			}
			rl.more.native.Refused(c) // nothing was deleted: the script does it
		}
	}
	if rl.conn.Proc != nil {
		return rl.conn.EvalOnceBoxed(ctx, releaseScript, 1, rl.keyedReleaseArgs())
	}
	return rl.conn.EvalOnce(ctx, releaseScript, rl.lockKeys(), rl.releaseArgs()...)
}

// reply is a command's answer, carried through deadline.Within.
type reply struct {
	val any
	err error
}
