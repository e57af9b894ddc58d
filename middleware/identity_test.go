package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

// On a server that rejects CLIENT SETINFO (redis-server 7.0, Debian 12's),
// go-zero's default RedisConf sends it on every new connection and its
// breaker counts each rejection, so a burst of new connections opened the
// breaker and the middleware answered 503 to legitimate requests. Now the
// default configuration is refused at start-up with the fix named, and the
// fixed one never answers 503 to bursts of new connections under CPU load.
func TestBurstOnOldServerNeverAnswers503(t *testing.T) {
	conf := resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "header:X-User", "json:orderId")

	// go-zero shares one client per address, so the refused store gets a
	// server of its own.
	old := redistest.Start(t)
	if old.Client(t).Do(context.Background(), "client", "setinfo", "lib-ver", "1").Err() == nil {
		t.Log("this redis-server accepts CLIENT SETINFO: only the burst half applies")
	} else {
		// Refused whichever way the store reaches the middleware.
		store := zredis.MustNewRedis(zredis.RedisConf{Host: old.Addr(), Type: zredis.NodeType})
		gz := redislock.GoZeroStore(store)
		for name, build := range map[string]func() error{
			"NewLockMiddleware": func() error { _, err := middleware.NewLockMiddleware(conf, store); return err },
			"WithBackend, a store backend": func() error {
				_, err := middleware.NewLockMiddlewareWithBackend(conf, redislock.NewBackend(gz))
				return err
			},
			"WithBackend, Redlock": func() error {
				conf := conf
				conf.DisableRenew = true // Redlock's locks cannot renew
				_, err := middleware.NewLockMiddlewareWithBackend(conf, redislock.NewRedLockBackend([]redislock.Store{gz, gz, gz}))
				return err
			},
		} {
			err := build()
			if !errors.Is(err, middleware.ErrBadConfig) || !errors.Is(err, redislock.ErrIdentityRejected) ||
				!errors.Is(err, zerolock.ErrMisconfigured) || !strings.Contains(err.Error(), "DisableIdentity: true") {
				t.Fatalf("%s: go-zero's default RedisConf on a server rejecting CLIENT SETINFO: err = %v, "+
					"want ErrBadConfig, ErrIdentityRejected and ErrMisconfigured naming DisableIdentity: true", name, err)
			}
		}
		if _, err := middleware.NewLockMiddleware(conf, nil); !errors.Is(err, middleware.ErrBadConfig) {
			t.Fatalf("nil store: err = %v, want ErrBadConfig", err)
		}
	}

	srv := redistest.Start(t)
	admin := srv.Client(t)
	store := zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, DisableIdentity: true})
	m := mustMiddleware(t, conf, store)
	// go-zero's load shedding answers 503 by design while the CPU is over
	// 90%, which the load below causes: off, so a 503 here is the lock's.
	rc := resttest.Conf(t)
	rc.CpuThreshold = 0
	base := resttest.ServeConf(t, rc, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusOK)
		}}})

	stop := make(chan struct{})
	var load sync.WaitGroup
	for i := 0; i < 2*runtime.GOMAXPROCS(0); i++ {
		load.Add(1)
		go func() { // CPU load, until the bursts are over
			defer load.Done()
			for x := 0; ; x++ {
				if x%1024 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
			}
		}()
	}
	defer func() { close(stop); load.Wait() }()

	const rounds, burst = 30, 20
	for round := 0; round < rounds; round++ {
		// Every connection of the store's pool is gone: the burst dials anew.
		if err := admin.Do(context.Background(), "client", "kill", "type", "normal", "skipme", "yes").Err(); err != nil {
			t.Fatal(err)
		}
		results := make(chan resttest.Result, burst)
		var wg sync.WaitGroup
		for i := 0; i < burst; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results <- resttest.Do(t, http.MethodPost, base+"/orders",
					fmt.Sprintf(`{"orderId":"r%d-%d"}`, round, i), "X-User", "u")
			}()
		}
		wg.Wait()
		close(results)
		for r := range results {
			if r.Status != http.StatusOK {
				t.Fatalf("round %d: a request of the burst got %d %s, want 200", round, r.Status, r.Body)
			}
		}
	}
}
