package redislock_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/internal/redistest"
)

// quiet drops go-redis's internal log lines (dial failures while a test
// has stopped the server on purpose).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	logx.Disable()
	redis.SetLogger(quiet{})
	redistest.Main(m)
}
