package redistest

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/logx"
	"go.uber.org/goleak"
)

// LeakOptions are the goleak options of every package that tests against
// go-zero: they ignore goroutines that go-zero starts once per process and
// never stops (signal and CPU-stat loops from its init functions, its
// shared client pools' redial loops when a test killed their server, the
// stat collectors and load-shedding loops of its rest and zrpc servers, and
// the goroutine of each rest server, which go-zero keeps waiting for the
// process to shut down even after its http.Server was shut down, and each
// zrpc server's, whose Stop only closes the logs: its gRPC server stops at
// process shutdown), so that goleak reports only what zerolock starts.
func LeakOptions() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("github.com/zeromicro/go-zero/core/proc.init.1.func1"),
		goleak.IgnoreTopFunction("github.com/zeromicro/go-zero/core/stat.init.1.func1"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"),
		goleak.IgnoreTopFunction("github.com/zeromicro/go-zero/core/executors.(*PeriodicalExecutor).backgroundFlush.func1"),
		goleak.IgnoreTopFunction("github.com/zeromicro/go-zero/core/load.(*SheddingStat).loop"),
		goleak.IgnoreAnyFunction("github.com/zeromicro/go-zero/core/proc.(*listenerManager).addListener.func2"),
		goleak.IgnoreAnyFunction("github.com/zeromicro/go-zero/zrpc/internal.(*rpcServer).Start"),
	}
}

// Quiet silences the logs of go-zero and go-redis (dial failures while a
// test has stopped a server on purpose), for TestMain.
func Quiet() {
	logx.Disable()
	redis.SetLogger(quietLogger{})
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Main runs a package's tests, runs beforeStop (what closes clients the
// package keeps for the process, whose background work would dial the
// cluster's nodes once they are gone), stops the shared cluster if one was
// started, checks for leaked goroutines (with LeakOptions) after a passing
// run, and exits.
//
// Before the tests it sets logx up as a go-zero service's default
// configuration does: the first logx.SetUp of a process (which every
// rest.MustNewServer and zrpc.MustNewServer calls) writes logx's field
// keys unsynchronised, and a test that starts a server while a Redis call
// of another is being logged would otherwise race with it.
func Main(m *testing.M, beforeStop ...func()) {
	var c logx.LogConf
	if err := conf.FillDefault(&c); err == nil {
		c.Stat = false // no CPU and memory lines every minute in test output
		_ = logx.SetUp(c)
	}
	code := m.Run()
	for _, f := range beforeStop {
		f()
	}
	CloseSharedCluster()
	if code == 0 {
		if err := goleak.Find(LeakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
