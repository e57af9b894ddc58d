package redislock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
)

// preloaded records the go-zero store addresses whose scripts have been
// loaded. It is keyed by address, like go-zero's own connection pools, so it
// stays small however many *redis.Redis values a program creates.
var preloaded sync.Map // map[string]struct{}

// GoZeroStore adapts go-zero's *redis.Redis (a node or a cluster, as its
// RedisConf says) to Store. Commands go through go-zero's client, so its
// circuit breaker, metrics and tracing see them.
//
// go-zero's breaker counts every error reply as a failure, including the
// NOSCRIPT that EVALSHA gets from a server whose script cache is empty. The
// adapter therefore loads the lock scripts with SCRIPT LOAD (which cannot
// answer NOSCRIPT) before its first EVALSHA on an address; after a SCRIPT
// FLUSH or a failover, the one NOSCRIPT is followed by an EVAL that caches
// the script again, so a release is never lost to it.
func GoZeroStore(store *zredis.Redis) Store {
	return goZeroStore{r: store}
}

type goZeroStore struct {
	r *zredis.Redis
}

func (s goZeroStore) SetNX(ctx context.Context, key string, value any,
	expiration time.Duration) *redis.BoolCmd {
	cmd := redis.NewBoolCmd(ctx, "set", key, value, "px", expiration.Milliseconds(), "nx")
	_, err := s.r.DoCtx(ctx, cmd.Args()...)
	switch {
	case err == nil:
		cmd.SetVal(true)
	case errors.Is(err, redis.Nil):
		cmd.SetVal(false)
	default:
		cmd.SetErr(err)
	}
	return cmd
}

func (s goZeroStore) PTTL(ctx context.Context, key string) *redis.DurationCmd {
	cmd := redis.NewDurationCmd(ctx, time.Millisecond, "pttl", key)
	val, err := s.r.DoCtx(ctx, cmd.Args()...)
	if err != nil {
		cmd.SetErr(err)
		return cmd
	}
	ms, ok := val.(int64)
	switch {
	case !ok:
		cmd.SetErr(ErrUnexpectedReply)
	case ms < 0: // -2 absent, -1 no expiry: go-redis keeps them unscaled
		cmd.SetVal(time.Duration(ms))
	default:
		cmd.SetVal(time.Duration(ms) * time.Millisecond)
	}
	return cmd
}

func (s goZeroStore) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	val, err := s.r.EvalCtx(ctx, script, keys, args...)
	setCmd(cmd, val, err)
	return cmd
}

func (s goZeroStore) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	s.preload(ctx)
	cmd := redis.NewCmd(ctx)
	val, err := s.r.EvalShaCtx(ctx, sha1, keys, args...)
	setCmd(cmd, val, err)
	return cmd
}

func (s goZeroStore) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	cmd := redis.NewStringCmd(ctx)
	sha, err := s.r.ScriptLoadCtx(ctx, script)
	cmd.SetVal(sha)
	cmd.SetErr(err)
	return cmd
}

// preload loads every lock script once per address. A failed load is not
// recorded, so the next EVALSHA tries again; the EVALSHA itself still falls
// back to EVAL on NOSCRIPT.
func (s goZeroStore) preload(ctx context.Context) {
	if _, ok := preloaded.Load(s.r.Addr); ok {
		return
	}
	for _, sc := range allScripts {
		if err := s.ScriptLoad(ctx, sc.src).Err(); err != nil {
			return
		}
	}
	preloaded.Store(s.r.Addr, struct{}{})
}

func setCmd(cmd *redis.Cmd, val any, err error) {
	if err != nil {
		cmd.SetErr(err)
		return
	}
	cmd.SetVal(val)
}
