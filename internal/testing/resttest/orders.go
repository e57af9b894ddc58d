package resttest

import (
	"net/http"
	"time"

	"github.com/zerolock/zerolock/middleware"
)

// OrdersConf returns a middleware.LockConf with mode and expire and one
// rule: POST /orders, the Gate's route, locked by keys (for example
// "claim:userId", "json:orderId").
func OrdersConf(mode string, expire time.Duration, keys ...string) middleware.LockConf {
	return middleware.LockConf{
		Expire: expire,
		Mode:   mode,
		Rules: []middleware.LockRule{{
			Method: http.MethodPost, Path: "/orders", Keys: keys,
		}},
	}
}
