package middleware_test

import (
	"errors"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// An option that a backend's locks refuse fails at start-up, not at the
// first request, where FailOpen would have served every request unlocked.
// A backend's WithFencing fences its locks, and limit mode's semaphores go
// without it.
func TestStartUpRefusesInapplicableBackendOption(t *testing.T) {
	client := redistest.Start(t).Client(t)
	conf := resttest.OrdersConf(middleware.ModeWindow, 5*time.Second, "header:X-User", "json:orderId")
	conf.FailOpen = true
	conf.DisableRenew = true // Redlock's locks cannot renew: refused first otherwise
	stores := []redislock.Store{client, client, client}
	for name, backend := range map[string]zerolock.Backend{
		"RedisLock, WithNodeTimeout": redislock.NewBackend(client, redislock.WithNodeTimeout(time.Second)),
		"RedLock, WithBackoff":       redislock.NewRedLockBackend(stores, redislock.WithBackoff(time.Millisecond, 10*time.Millisecond)),
		"RedLock, WithFencing":       redislock.NewRedLockBackend(stores, redislock.WithFencing()),
	} {
		_, err := middleware.NewLockMiddlewareWithBackend(conf, backend)
		if !errors.Is(err, middleware.ErrBadConfig) || !errors.Is(err, redislock.ErrOptionNotApplicable) {
			t.Errorf("%s: err = %v; want ErrBadConfig and ErrOptionNotApplicable at start-up", name, err)
		}
	}

	limit := resttest.OrdersConf(middleware.ModeLimit, 5*time.Second, "header:X-User")
	limit.Permits = 2
	if _, err := middleware.NewLockMiddlewareWithBackend(limit, redislock.NewBackend(client, redislock.WithFencing())); err != nil {
		t.Fatalf("limit mode on a backend WithFencing: %v", err)
	}
}
