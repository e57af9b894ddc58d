// Package svc holds the dependencies the handlers and logic share.
package svc

import (
	"context"
	"strconv"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/example/api/internal/config"
	"github.com/zerolock/zerolock/example/internal/embedredis"
	// goctl's own internal/middleware package (the generated stub) has
	// the same name: zerolock's takes an alias.
	zlmiddleware "github.com/zerolock/zerolock/middleware"
)

// ServiceContext is what every handler and logic receives.
type ServiceContext struct {
	Config config.Config
	Redis  *redis.Redis
	// Lock is the anti-duplicate middleware of the routes etc/api.yaml's
	// Lock.Rules name, in the field goctl generates for the .api file's
	// middleware: Lock.
	Lock rest.Middleware
	// Locks is that middleware itself, for main's route check.
	Locks *zlmiddleware.LockMiddleware
	// Reports is the fenced storage the report rebuilds write to.
	Reports *FencedStore

	embedded *embedredis.Server
}

// NewServiceContext connects to the configured Redis, or starts an embedded
// miniredis, whose keys expire in real time, when the configuration names
// no host, and seeds the demo stock.
func NewServiceContext(c config.Config) *ServiceContext {
	sc := &ServiceContext{Config: c, Reports: NewFencedStore()}
	if c.Redis.Host == "" {
		embedded, err := embedredis.Start()
		logx.Must(err)
		sc.embedded = embedded
		c.Redis = redis.RedisConf{Host: sc.embedded.Addr(), Type: redis.NodeType, NonBlock: true,
			// miniredis rejects CLIENT SETINFO, which go-zero's breaker would
			// count as a failure on every new connection.
			DisableIdentity: true}
		logx.Infof("no Redis host configured: started an embedded miniredis at %s", c.Redis.Host)
	}
	sc.Config = c
	sc.Redis = redis.MustNewRedis(c.Redis)
	locks := zlmiddleware.MustNewLockMiddleware(c.Lock, sc.Redis)
	sc.Lock, sc.Locks = locks.Handle, locks
	for sku, n := range c.SeedStock {
		if _, err := sc.Redis.SetnxCtx(context.Background(), StockKey(sku), strconv.FormatInt(n, 10)); err != nil {
			logx.Must(err)
		}
	}
	return sc
}

// Close stops the embedded miniredis and its clock, if one was started.
func (sc *ServiceContext) Close() {
	if sc.embedded != nil {
		sc.embedded.Close()
	}
}

// StockKey is the Redis key of an item's stock counter.
func StockKey(sku string) string {
	return "demo:stock:" + sku
}

// LockKey is the Redis key of the lock that guards an item's stock.
func LockKey(sku string) string {
	return "demo:lock:stock:" + sku
}

// ReportLockKey is the Redis key of the lock that guards a report's
// rebuild.
func ReportLockKey(id string) string {
	return "demo:lock:report:" + id
}

// PaymentSeqKey is the Redis counter that numbers the demo's payments.
const PaymentSeqKey = "demo:payments:seq"

// OrderKey is the Redis key counting how often an order was processed.
func OrderKey(userID, orderID string) string {
	return "demo:orders:" + userID + ":" + orderID
}

// CouponKey is the Redis key counting a coupon's redemptions.
func CouponKey(code string) string {
	return "demo:coupons:" + code
}
