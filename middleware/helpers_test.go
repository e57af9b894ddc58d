package middleware_test

import (
	"testing"

	"github.com/zeromicro/go-zero/core/prometheus"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/middleware"
)

const jwtSecret = "zerolock-test-secret"

func TestMain(m *testing.M) {
	prometheus.Enable() // go-zero records metrics only when Prometheus is on
	redistest.Quiet()
	redistest.Main(m)
}

// newStore returns go-zero's store for srv (see redislock's tests for why
// DisableIdentity).
func newStore(srv *redistest.Server) *zredis.Redis {
	return zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	})
}

func mustMiddleware(t *testing.T, c middleware.LockConf, store *zredis.Redis) *middleware.LockMiddleware {
	t.Helper()
	m, err := middleware.NewLockMiddleware(c, store)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
