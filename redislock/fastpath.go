package redislock

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// setGetSupport remembers whether a store's server refused SET NX GET
// (Redis before 7.0), so that the locks sharing it stop asking. A Backend
// shares one among the locks it makes; a lock from New has its own.
type setGetSupport struct {
	refused atomic.Bool
}

// sharedSetGet makes locks share one memory of the store's support.
func sharedSetGet(s *setGetSupport) Option {
	return func(o *options) {
		o.setGet = s
	}
}

// setNXGet is the fast acquire: SET key token NX PX px GET. Unlike a plain
// SET NX it is safe to retry, which client libraries do by themselves after
// a lost reply (go-redis retries on a reset connection or a read timeout):
// a retry finds the key holding our own token and says so (mine), where
// SET NX would answer "not set" for a lock we hold. refused reports a
// server that does not accept NX with GET; the caller runs the script.
func (rl *RedisLock) setNXGet(ctx context.Context, px time.Duration) (ok, mine, refused bool, err error) {
	old, err := rl.store.SetArgs(ctx, rl.key, rl.tokenArg, redis.SetArgs{Mode: "NX", TTL: px, Get: true}).Result()
	switch {
	case errors.Is(err, redis.Nil):
		return true, false, false, nil
	case err != nil:
		if isSyntaxError(err) {
			rl.setGet.refused.Store(true)
			return false, false, true, nil
		}
		return false, false, false, err
	}
	return false, old == rl.token, false, nil
}

// isSyntaxError reports the reply of a server older than Redis 7.0 to SET
// with both NX and GET.
func isSyntaxError(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.HasPrefix(err.Error(), "ERR syntax error")
}
