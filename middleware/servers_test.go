package middleware_test

import (
	"context"
	"net/http"
	"strconv"
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

// defaultStore is go-zero's store for srv as a service configures it by
// default: identity on, so go-zero sends CLIENT SETINFO on every new
// connection, which Redis 7.2 and later and Valkey accept.
func defaultStore(t *testing.T, srv *redistest.Server) *zredis.Redis {
	t.Helper()
	store := zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true})
	if err := redislock.NewBackend(redislock.GoZeroStore(store)).(zerolock.Checker).Check(context.Background()); err != nil {
		t.Fatalf("go-zero's default store on %s: %v", srv.Version(), err)
	}
	return store
}

// TestOnServers runs the middleware's main paths end to end, through a
// real rest.Server, on Valkey 9 and Redis 8 (the tests above run them on
// the system's redis-server): concurrent duplicates get one 409 each while
// the first runs (inflight, go-zero's default store, identity on), a retry
// is replayed (replay, the same store), and a request over the limit gets
// 429 (limit, a go-redis client). Nothing is left in Redis afterwards but
// the stored answer.
func TestOnServers(t *testing.T) {
	redistest.EachFlavour(t, func(t *testing.T, srv *redistest.Server) {
		t.Logf("on %s", srv.Version())
		store := defaultStore(t, srv)
		admin := srv.Client(t)
		t.Run("duplicate", func(t *testing.T) { duplicateRefused(t, store) })
		t.Run("replay", func(t *testing.T) { retryReplayed(t, store) })
		t.Run("limit", func(t *testing.T) { overLimitRefused(t, srv) })
		if keys := admin.Keys(context.Background(), "zerolock:*").Val(); len(keys) != 1 {
			t.Fatalf("keys left in Redis: %v, want only the stored answer", keys)
		}
	}, redistest.NewFlavours()...)
}

// duplicateRefused: while one request runs, 5 duplicates are refused with
// 409, Retry-After and the JSON refusal; after it ends the same request
// runs again (inflight mode).
func duplicateRefused(t *testing.T, store *zredis.Redis) {
	m := mustMiddleware(t, resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "header:X-User-Id", "json:orderId"), store)
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}})
	send := func() resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"V-1"}`, "X-User-Id", "alice")
	}
	first := make(chan resttest.Result, 1)
	go func() { first <- send() }()
	<-g.Inside
	for i := 0; i < 5; i++ {
		r := send()
		if r.Status != http.StatusConflict || errorCode(r) != "duplicate_request" {
			t.Fatalf("duplicate answered %d %s, want 409 duplicate_request", r.Status, r.Body)
		}
		if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 || secs > 5 {
			t.Fatalf("Retry-After = %q, want 1..5 seconds", r.Header.Get("Retry-After"))
		}
	}
	close(g.Release)
	if r := <-first; r.Status != http.StatusOK || !strings.Contains(r.Body, "V-1") {
		t.Fatalf("the admitted request answered %d %s", r.Status, r.Body)
	}
	if r := send(); r.Status != http.StatusOK {
		t.Fatalf("the same request after the first ended: %d %s, want 200 (released)", r.Status, r.Body)
	}
	if got := g.Entered.Load(); got != 2 {
		t.Fatalf("%d requests reached the handler, want 2", got)
	}
}

// retryReplayed: concurrent first requests under one key run once, the
// others are refused while it runs, and sequential retries get its answer
// replayed (replay mode).
func retryReplayed(t *testing.T, store *zredis.Redis) {
	var p payments
	base := servePayments(t, replayConf("/pay", payKeys...), store, "/pay", &p)
	const n = 5
	answers := make(chan resttest.Result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers <- pay(t, base+"/pay", "k-servers", `{"amount":7}`)
		}()
	}
	wg.Wait()
	close(answers)
	var first resttest.Result
	for r := range answers {
		switch {
		case r.Status == http.StatusCreated && r.Header.Get("Idempotent-Replayed") == "":
			if first.Status != 0 {
				t.Fatalf("two first answers: %s and %s", first.Body, r.Body)
			}
			first = r
		case r.Status == http.StatusConflict && errorCode(r) == "duplicate_request":
		case r.Status == http.StatusCreated && r.Header.Get("Idempotent-Replayed") == "true":
		default:
			t.Fatalf("a first request answered %d %s (replayed %q)", r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
		}
	}
	if first.Status == 0 {
		t.Fatal("no request ran")
	}
	for i := 0; i < 3; i++ {
		sameAnswer(t, first, pay(t, base+"/pay", "k-servers", `{"amount":7}`))
	}
	if got := p.runs.Load(); got != 1 {
		t.Fatalf("the handler ran %d times, want once", got)
	}
}

// overLimitRefused: with Permits 2, a third concurrent export of one user
// gets 429, and once one ends a new one is served (limit mode).
func overLimitRefused(t *testing.T, srv *redistest.Server) {
	m, err := middleware.NewLockMiddlewareWithBackend(exportsConf(2), redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups()))
	if err != nil {
		t.Fatal(err)
	}
	e := newExports("alice")
	get := serveExports(t, m, e)
	alice := make(chan resttest.Result, 3)
	for i := 0; i < 2; i++ {
		go func() { alice <- get("alice") }()
	}
	wantInside(t, e, "alice")
	wantInside(t, e, "alice")
	wantOverLimit(t, get("alice"), 5)
	letOut(t, e, "alice")
	if r := <-alice; r.Status != http.StatusOK {
		t.Fatalf("an admitted export: %d %s", r.Status, r.Body)
	}
	go func() { alice <- get("alice") }()
	wantInside(t, e, "alice") // the freed permit serves a new export
	close(e.release["alice"])
	for i := 0; i < 2; i++ {
		if r := <-alice; r.Status != http.StatusOK {
			t.Fatalf("an admitted export: %d %s", r.Status, r.Body)
		}
	}
}
