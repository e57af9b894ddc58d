// Package svc holds the dependencies the server and logic share.
package svc

import (
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/example/internal/embedredis"
	"github.com/zerolock/zerolock/example/rpc/internal/config"
)

// ServiceContext is what every logic receives.
type ServiceContext struct {
	Config config.Config
	Redis  *redis.Redis

	embedded *embedredis.Server
}

// NewServiceContext connects to LockRedis, or starts an embedded miniredis,
// whose keys expire in real time, when it names no host.
func NewServiceContext(c config.Config) *ServiceContext {
	sc := &ServiceContext{}
	if c.LockRedis.Host == "" {
		embedded, err := embedredis.Start()
		logx.Must(err)
		sc.embedded = embedded
		c.LockRedis = redis.RedisConf{Host: sc.embedded.Addr(), Type: redis.NodeType, NonBlock: true,
			// miniredis rejects CLIENT SETINFO, which go-zero's breaker would
			// count as a failure on every new connection.
			DisableIdentity: true}
		logx.Infof("no LockRedis host configured: started an embedded miniredis at %s", c.LockRedis.Host)
	}
	sc.Config = c
	sc.Redis = redis.MustNewRedis(c.LockRedis)
	return sc
}

// Close stops the embedded miniredis and its clock, if one was started.
func (sc *ServiceContext) Close() {
	if sc.embedded != nil {
		sc.embedded.Close()
	}
}

// PaymentKey is the Redis key counting how often a user's order was paid.
func PaymentKey(userID, orderID string) string {
	return "demo:payments:" + userID + ":" + orderID
}
