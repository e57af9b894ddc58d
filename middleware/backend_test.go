package middleware_test

import (
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// duplicatesRefused holds one request in the handler and sends 9
// duplicates at once: all are refused, and the first completes. (Ten fresh
// Redlocks started at the same instant may split the votes so that none
// wins; that is Redlock's nature, not what this checks.)
func duplicatesRefused(t *testing.T, m *middleware.LockMiddleware) {
	t.Helper()
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}}, rest.WithJwt(jwtSecret))
	auth := "Bearer " + resttest.Token(t, jwtSecret, 7)
	first := make(chan resttest.Result, 1)
	go func() {
		first <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"B-1"}`, "Authorization", auth)
	}()
	<-g.Inside
	const n = 9
	results := make(chan resttest.Result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"B-1"}`, "Authorization", auth)
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if r := <-results; r.Status != http.StatusConflict {
			t.Fatalf("duplicate: %d %s, want 409", r.Status, r.Body)
		}
	}
	close(g.Release)
	if r := <-first; r.Status != http.StatusOK {
		t.Fatalf("admitted request: %d", r.Status)
	}
}

func TestRedlockBackend(t *testing.T) {
	var stores []redislock.Store
	for i := 0; i < 5; i++ {
		c := redistest.Start(t).Client(t)
		stores = append(stores, c)
	}
	// Redlock's locks cannot renew, and renewal is the default: refused at
	// start-up, naming the opt-out.
	c := resttest.OrdersConf(middleware.ModeInflight, 0, "claim:userId", "json:orderId")
	if _, err := middleware.NewLockMiddlewareWithBackend(c, redislock.NewRedLockBackend(stores)); !errors.Is(err, middleware.ErrBadConfig) ||
		!strings.Contains(err.Error(), "DisableRenew: true") {
		t.Fatalf("default conf on Redlock: %v, want ErrBadConfig naming DisableRenew: true (its locks cannot renew)", err)
	}
	c.DisableRenew = true
	m, err := middleware.NewLockMiddlewareWithBackend(c, redislock.NewRedLockBackend(stores, redislock.WithNodeTimeout(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	duplicatesRefused(t, m)
}

func TestGoZeroClusterStore(t *testing.T) {
	cluster := redistest.SharedCluster(t)
	store := zredis.MustNewRedis(zredis.RedisConf{
		Host: strings.Join(cluster.Addrs(), ","), Type: zredis.ClusterType, NonBlock: true, DisableIdentity: true,
	})
	c := resttest.OrdersConf(middleware.ModeInflight, 0, "claim:userId", "json:orderId")
	c.Renew, c.Fence = true, true
	duplicatesRefused(t, mustMiddleware(t, c, store))
}
