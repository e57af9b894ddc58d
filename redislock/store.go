package redislock

import (
	"context"

	"github.com/redis/go-redis/v9"
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
	_ Store = goZeroStore{}
)
