// Package svc holds the dependencies the handlers and logic share.
package svc

import (
	"context"
	"strconv"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/zrpc"

	"github.com/zerolock/zerolock/example/api/internal/config"
	"github.com/zerolock/zerolock/example/internal/embedredis"
	"github.com/zerolock/zerolock/example/rpc/payments"
	"github.com/zerolock/zerolock/example/rpc/rpcserver"
	"github.com/zerolock/zerolock/interceptor"
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
	// Payments is the client of the Payments service, with zerolock's
	// client interceptor: POST /checkout pays through it.
	Payments payments.PaymentsClient

	embedded     *embedredis.Server
	paymentsConn zrpc.Client
	inProcess    *rpcserver.InProcess
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
	sc.Payments = sc.dialPayments()
	for sku, n := range c.SeedStock {
		if _, err := sc.Redis.SetnxCtx(context.Background(), StockKey(sku), strconv.FormatInt(n, 10)); err != nil {
			logx.Must(err)
		}
	}
	return sc
}

// dialPayments connects to the Payments service that sc.Config names, or
// starts one in-process when it names none, so that the demo runs with
// nothing else installed.
func (sc *ServiceContext) dialPayments() payments.PaymentsClient {
	rpc := sc.Config.PaymentsRpc
	if len(rpc.Endpoints) == 0 && rpc.Target == "" && len(rpc.Etcd.Hosts) == 0 {
		p, err := rpcserver.StartInProcess(sc.Config.InProcessPayments)
		logx.Must(err)
		sc.inProcess = p
		rpc.Endpoints = []string{p.Addr()}
		logx.Infof("no payments endpoint configured: started the payments service in-process at %s", p.Addr())
	}
	sc.paymentsConn = zrpc.MustNewClient(rpc,
		zrpc.WithUnaryClientInterceptor(interceptor.MustUnaryClientInterceptor(sc.Config.Idempotency)))
	return payments.NewPaymentsClient(sc.paymentsConn.Conn())
}

// Close closes the payments client, then stops the in-process payments
// service and the embedded miniredis and its clock, if they were started.
func (sc *ServiceContext) Close() {
	if sc.paymentsConn != nil {
		_ = sc.paymentsConn.Conn().Close()
	}
	if sc.inProcess != nil {
		sc.inProcess.Close()
	}
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
