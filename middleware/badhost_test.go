package middleware_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// TestUnexpandedHostFailsAtStartUp: the README's etc/api.yaml copied into a
// goctl service, whose main loads its configuration without
// conf.UseEnv(), leaves Host a literal ${ZEROLOCK_REDIS_HOST}. The service
// used to start and answer every guarded request 503 after the store's
// timeout; now the middleware refuses the store at start-up, naming the
// fix. (go-zero itself refuses an empty Host.)
func TestUnexpandedHostFailsAtStartUp(t *testing.T) {
	conf := resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "header:X-User", "json:orderId")
	for host, fix := range map[string]string{
		"${ZEROLOCK_REDIS_HOST}":      "conf.UseEnv()",
		"${ZEROLOCK_REDIS_HOST}:6379": "conf.UseEnv()",
	} {
		store := zredis.MustNewRedis(zredis.RedisConf{Host: host, Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
		_, err := middleware.NewLockMiddleware(conf, store)
		if !errors.Is(err, middleware.ErrBadConfig) || !errors.Is(err, redislock.ErrBadAddress) || !strings.Contains(err.Error(), fix) {
			t.Errorf("Host %q: err = %v, want ErrBadConfig and redislock.ErrBadAddress naming %q", host, err, fix)
		}
	}
}
