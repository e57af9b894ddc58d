package redislock_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/logx"
	"go.uber.org/goleak"

	"github.com/zerolock/zerolock/internal/redistest"
)

// quiet drops go-redis's internal log lines (dial failures while a test
// has stopped the server on purpose).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

func TestMain(m *testing.M) {
	logx.Disable()
	redis.SetLogger(quiet{})
	code := m.Run()
	redistest.CloseSharedCluster()
	if code == 0 {
		if err := goleak.Find(redistest.LeakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
