package redislock

import (
	"context"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/gozero"
)

// Store is the small part of a Redis client that a lock needs. go-redis's
// *redis.Client, *redis.ClusterClient, *redis.Ring and every
// redis.UniversalClient satisfy it as they are; GoZeroStore adapts go-zero's
// *redis.Redis. Every call touches only the key it is given, so a Store may
// be a Redis Cluster.
type Store interface {
	// SetArgs is SET key value with options; a lock sends NX, PX and GET.
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
	// PTTL is PTTL key.
	PTTL(ctx context.Context, key string) *redis.DurationCmd
	// Eval is EVAL script numkeys keys... args...
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
	// EvalSha is EVALSHA sha1 numkeys keys... args...
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd
}

var (
	_ Store = (*redis.Client)(nil)
	_ Store = (*redis.ClusterClient)(nil)
	_ Store = (*redis.Ring)(nil)
	_ Store = redis.UniversalClient(nil)
	_ Store = (*gozero.Store)(nil)

	_ conn.Store = Store(nil)
)

// GoZeroStore adapts go-zero's *redis.Redis (a node or a cluster, as its
// RedisConf says) to Store. Commands go through go-zero's client, so its
// circuit breaker, metrics and tracing see them. A lock on it works
// wherever go-zero's own RedisLock does, the store being as the user made
// it. Before the first command the adapter asks, once per address, whether
// the server accepts the CLIENT SETINFO go-zero sends on new connections
// unless the RedisConf says DisableIdentity; where it does not (Redis
// before 7.2, miniredis), go-zero's circuit breaker counts each rejection,
// and a burst of new connections can open it while Redis is healthy. The
// lock then logs that hazard and its fix at error level, once per address,
// and goes on. NewBackend's Check, which the middleware and the
// interceptor run at start-up, refuses such a store with an error wrapping
// ErrIdentityRejected.
func GoZeroStore(store *zredis.Redis) Store {
	return gozero.New(store)
}
