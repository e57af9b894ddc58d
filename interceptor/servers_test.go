package interceptor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
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

// TestOnServers runs the interceptor's main paths end to end, through a
// real gRPC server, on Valkey 9 and Redis 8 (the tests above run them on
// the system's redis-server): concurrent duplicates are Aborted while the
// first runs (inflight, go-zero's default store, identity on), a retry is
// replayed (replay, the same store), and a call over the limit is Aborted
// with its QuotaFailure (limit, a go-redis client). Nothing is left in
// Redis afterwards but the stored response.
func TestOnServers(t *testing.T) {
	redistest.EachFlavour(t, func(t *testing.T, srv *redistest.Server) {
		t.Logf("on %s", srv.Version())
		store := defaultStore(t, srv)
		admin := srv.Client(t)
		t.Run("duplicate", func(t *testing.T) { duplicateAborted(t, store) })
		t.Run("replay", func(t *testing.T) { retryReplayed(t, store) })
		t.Run("limit", func(t *testing.T) { overLimitAborted(t, srv) })
		if keys := admin.Keys(context.Background(), "zerolock:*").Val(); len(keys) != 1 {
			t.Fatalf("keys left in Redis: %v, want only the stored response", keys)
		}
	}, redistest.NewFlavours()...)
}

// duplicateAborted: while one call runs, 5 duplicates are Aborted with a
// RetryInfo; after it ends the same call runs again (inflight mode).
func duplicateAborted(t *testing.T, store *zredis.Redis) {
	impl := newPayments()
	impl.release = make(chan struct{})
	client := serve(t, payConf(interceptor.ModeInflight, "field:order.id", "metadata:x-user-id"), store, impl)
	first := make(chan error, 1)
	go func() { _, err := client.Pay(withUser("alice"), order("V-1")); first <- err }()
	<-impl.inside
	for i := 0; i < 5; i++ {
		_, err := client.Pay(withUser("alice"), order("V-1"))
		if status.Code(err) != codes.Aborted || retryDelay(err) <= 0 || retryDelay(err) > 5*time.Second {
			t.Fatalf("duplicate answered %v, want Aborted with a RetryInfo of (0, 5s]", err)
		}
	}
	close(impl.release)
	if err := <-first; err != nil {
		t.Fatalf("the admitted call: %v", err)
	}
	if _, err := client.Pay(withUser("alice"), order("V-1")); err != nil {
		t.Fatalf("the same call after the first ended: %v, want it run (released)", err)
	}
	if got := impl.entered.Load(); got != 2 {
		t.Fatalf("%d calls reached the method, want 2", got)
	}
}

// retryReplayed: concurrent first calls under one key run once, the
// others are Aborted while it runs or replayed after it, and sequential
// retries get its response replayed (replay mode).
func retryReplayed(t *testing.T, store *zredis.Redis) {
	impl := newLedger()
	client := serve(t, replayConf("field:order.id", "ctx:userId"), store, impl, authenticate)
	const n = 5
	type answer struct {
		resp     *testpb.PayReply
		replayed bool
		err      error
	}
	answers := make(chan answer, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, header, err := pay(client, payment("V-2", 7))
			answers <- answer{resp, isReplayed(header), err}
		}()
	}
	wg.Wait()
	close(answers)
	var first *testpb.PayReply
	for a := range answers {
		switch {
		case a.err == nil && !a.replayed:
			if first != nil {
				t.Fatalf("two calls ran: %v and %v", first, a.resp)
			}
			first = a.resp
		case a.err == nil && a.replayed:
		case status.Code(a.err) == codes.Aborted && retryDelay(a.err) > 0:
		default:
			t.Fatalf("a first call answered %v, %v (replayed %v); want it run, replayed or Aborted", a.resp, a.err, a.replayed)
		}
	}
	if first == nil {
		t.Fatal("no call ran")
	}
	for i := 0; i < 3; i++ {
		mustReplay(t, client, payment("V-2", 7), first)
	}
	if got := impl.runs.Load(); got != 1 {
		t.Fatalf("Pay ran %d times, want once", got)
	}
}

// overLimitAborted: with Permits 2, a third concurrent call of one user is
// Aborted with RetryInfo and QuotaFailure, and once one ends a new one is
// served (limit mode).
func overLimitAborted(t *testing.T, srv *redistest.Server) {
	lock, err := interceptor.UnaryServerInterceptorWithBackend(limitConf(2), redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups()))
	if err != nil {
		t.Fatal(err)
	}
	e := newExportsServer("alice")
	client := serveWith(t, lock, e)
	alice := make(chan error, 3)
	for i := 0; i < 2; i++ {
		go func() { _, err := client.Pay(withUser("alice"), order("E-1")); alice <- err }()
	}
	wantEntered(t, e, "alice")
	wantEntered(t, e, "alice")
	_, err = client.Pay(withUser("alice"), order("E-1"))
	wantOverLimit(t, err, 2, 5*time.Second)
	e.release["alice"] <- struct{}{}
	if err := <-alice; err != nil {
		t.Fatalf("an admitted call: %v", err)
	}
	go func() { _, err := client.Pay(withUser("alice"), order("E-1")); alice <- err }()
	wantEntered(t, e, "alice") // the freed permit serves a new call
	close(e.release["alice"])
	for i := 0; i < 2; i++ {
		if err := <-alice; err != nil {
			t.Fatalf("an admitted call: %v", err)
		}
	}
}
