package guard

import (
	"context"
	"errors"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/redislock"
)

var errNilStore = errors.New("guard: nil go-zero store")

// storeCheckTimeout bounds the start-up check of a go-zero store, as
// go-zero's own PingTimeout does.
const storeCheckTimeout = time.Second

// CheckStore runs redislock.CheckGoZeroStore at start-up. It returns the
// refusal of a store that would trip its own circuit breaker (wrapping
// redislock.ErrIdentityRejected, naming the fix); a server that cannot be
// reached now is logged, and the locks check it again before their first
// command.
func CheckStore(store *redis.Redis) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeCheckTimeout)
	defer cancel()
	if store == nil {
		return errNilStore
	}
	err := redislock.CheckGoZeroStore(ctx, store)
	if err != nil && !errors.Is(err, redislock.ErrIdentityRejected) {
		logx.Errorf("zerolock: %v (checked again before the first lock)", err)
		return nil
	}
	return err
}
