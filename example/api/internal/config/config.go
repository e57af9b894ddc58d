// Package config is the configuration of the demo API, loaded from
// etc/api.yaml.
package config

import (
	"time"

	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/zrpc"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/middleware"
)

// Config is the service configuration.
type Config struct {
	rest.RestConf
	// Redis is the store of the locks and the demo data. With an empty Host
	// the service starts an embedded miniredis instead.
	Redis redis.RedisConf `json:",optional"`
	// SeedStock is the stock each demo item starts with on an empty store.
	SeedStock map[string]int64 `json:",optional"`
	// DeductHold is how long a deduction holds the item's lock, standing in
	// for slow work so that a duplicate can be seen to get 409.
	DeductHold time.Duration `json:",default=0s"`
	// OrderHold is how long creating an order takes, standing in for slow
	// work, so a double-click can be seen to get 409.
	OrderHold time.Duration `json:",default=0s"`
	// ExportHold is how long an export of the caller's orders takes,
	// standing in for slow work, so that a third concurrent export of one
	// user can be seen to get 429.
	ExportHold time.Duration `json:",default=0s"`
	// RebuildTime is how long a report rebuild works while holding its lock.
	RebuildTime time.Duration `json:",default=0s"`
	// Auth signs and checks the demo's JWTs.
	Auth struct {
		AccessSecret string
		AccessExpire int64 `json:",default=3600"`
	}
	// Lock is the anti-duplicate middleware's configuration.
	Lock middleware.LockConf
	// PaymentsRpc is the client of example/rpc's Payments service, which
	// POST /checkout calls. With no Endpoints, Target or Etcd hosts the
	// service starts the Payments service itself, in-process on a free
	// loopback port, as InProcessPayments configures it.
	PaymentsRpc zrpc.RpcClientConf `json:",optional"`
	// InProcessPayments is the config file of the Payments service started
	// in-process when PaymentsRpc names none to dial.
	InProcessPayments string `json:",default=etc/rpc.yaml"`
	// Idempotency is the client interceptor on PaymentsRpc: the calls to
	// its Methods carry an idempotency key derived from the request being
	// served, and are retried with it when a retry is safe.
	Idempotency interceptor.ClientConf
}
