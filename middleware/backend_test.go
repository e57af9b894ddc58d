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

	"github.com/zerolock/zerolock/internal/redistest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// duplicatesRefused holds one request in the handler and sends 9
// duplicates at once: all are refused, and the first completes. (Ten fresh
// Redlocks started at the same instant may split the votes so that none
// wins; that is Redlock's nature, not what this checks.)
func duplicatesRefused(t *testing.T, m *middleware.LockMiddleware) {
	t.Helper()
	g := newGate()
	base := serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.handler}}, rest.WithJwt(jwtSecret))
	auth := "Bearer " + token(t, 7)
	first := make(chan result, 1)
	go func() { first <- do(t, http.MethodPost, base+"/orders", `{"orderId":"B-1"}`, "Authorization", auth) }()
	<-g.inside
	const n = 9
	results := make(chan result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- do(t, http.MethodPost, base+"/orders", `{"orderId":"B-1"}`, "Authorization", auth)
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if r := <-results; r.status != http.StatusConflict {
			t.Fatalf("duplicate: %d %s, want 409", r.status, r.body)
		}
	}
	close(g.release)
	if r := <-first; r.status != http.StatusOK {
		t.Fatalf("admitted request: %d", r.status)
	}
}

func TestRedlockBackend(t *testing.T) {
	var stores []redislock.Store
	for i := 0; i < 5; i++ {
		c := redistest.Start(t).Client(t)
		stores = append(stores, c)
	}
	m, err := middleware.NewLockMiddlewareWithBackend(ordersConf(middleware.ModeInflight, 0), redislock.RedLockBackend(stores, redislock.WithNodeTimeout(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	duplicatesRefused(t, m)

	c := ordersConf(middleware.ModeInflight, 0)
	c.Renew = true
	if _, err := middleware.NewLockMiddlewareWithBackend(c, redislock.RedLockBackend(stores)); !errors.Is(err, middleware.ErrBadConfig) {
		t.Fatalf("Renew on Redlock: %v, want ErrBadConfig (its locks cannot renew)", err)
	}
}

func TestGoZeroClusterStore(t *testing.T) {
	cluster := redistest.SharedCluster(t)
	store := zredis.MustNewRedis(zredis.RedisConf{
		Host: strings.Join(cluster.Addrs(), ","), Type: zredis.ClusterType, NonBlock: true, DisableIdentity: true,
	})
	c := ordersConf(middleware.ModeInflight, 0)
	c.Renew, c.Fence = true, true
	duplicatesRefused(t, mustMiddleware(t, c, store))
}
