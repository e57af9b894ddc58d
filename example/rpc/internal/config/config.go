// Package config is the configuration of the demo RPC service, loaded from
// etc/rpc.yaml.
package config

import (
	"time"

	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/zrpc"

	"github.com/zerolock/zerolock/interceptor"
)

// Config is the service configuration.
type Config struct {
	zrpc.RpcServerConf
	// LockRedis is the store of the locks. It is not called Redis because
	// zrpc.RpcServerConf already has a Redis field, for zrpc's own auth.
	// With an empty Host the service starts an embedded miniredis.
	LockRedis redis.RedisConf `json:",optional"`
	// Lock is the interceptor's configuration.
	Lock interceptor.LockConf
	// PayHold is how long a payment takes, standing in for slow work, so a
	// duplicate call can be seen to get Aborted.
	PayHold time.Duration `json:",default=0s"`
	// LoseAnswers is a demo switch: the service honours the
	// demo-lose-answer metadata by losing the first answer to each
	// idempotency-key that asks for it, so that the client interceptor's
	// retry can be seen to get the payment replayed. Leave it out of a
	// real service.
	LoseAnswers bool `json:",optional"`
}
