package interceptor_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// A go-zero store whose server rejects the CLIENT SETINFO it sends on every
// new connection would trip its own breaker under a burst of new
// connections: every constructor refuses it at start-up, naming the fix,
// whichever way the store reaches the interceptor.
func TestStartUpRefusesStoreRejectingIdentity(t *testing.T) {
	// go-zero shares one client per address: this server is this test's.
	srv := redistest.Start(t)
	if srv.Client(t).Do(context.Background(), "client", "setinfo", "lib-ver", "1").Err() == nil {
		t.Skipf("%s accepts CLIENT SETINFO: nothing to refuse", srv.Version())
	}
	store := zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true})
	gz := redislock.GoZeroStore(store)
	conf := payConf(interceptor.ModeInflight, "field:order.id", "metadata:x-user-id")
	for name, build := range map[string]func() error{
		"UnaryServerInterceptor": func() error { _, err := interceptor.UnaryServerInterceptor(conf, store); return err },
		"WithBackend, a store backend": func() error {
			_, err := interceptor.UnaryServerInterceptorWithBackend(conf, redislock.NewBackend(gz))
			return err
		},
		"WithBackend, Redlock": func() error {
			conf := conf
			conf.DisableRenew = true // Redlock's locks cannot renew
			_, err := interceptor.UnaryServerInterceptorWithBackend(conf, redislock.NewRedLockBackend([]redislock.Store{gz, gz, gz}))
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			err := build()
			if !errors.Is(err, interceptor.ErrBadConfig) || !errors.Is(err, redislock.ErrIdentityRejected) ||
				!errors.Is(err, zerolock.ErrMisconfigured) || !strings.Contains(err.Error(), "DisableIdentity: true") {
				t.Fatalf("err = %v; want ErrBadConfig, ErrIdentityRejected and ErrMisconfigured naming DisableIdentity: true", err)
			}
		})
	}
	// A nil store is refused as well, not a panic at the first call.
	if _, err := interceptor.UnaryServerInterceptor(conf, nil); !errors.Is(err, interceptor.ErrBadConfig) {
		t.Fatalf("nil store: err = %v, want ErrBadConfig", err)
	}
}
