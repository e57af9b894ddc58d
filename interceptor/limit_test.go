package interceptor_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/breaker"
	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/prometheus"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
	"github.com/zerolock/zerolock/redislock"
)

// limitConf limits Pay to permits concurrent calls per x-user-id.
func limitConf(permits int) interceptor.LockConf {
	return interceptor.LockConf{Rules: []interceptor.LockRule{{
		Method: payMethod, Mode: interceptor.ModeLimit, Permits: permits, Keys: []string{"metadata:x-user-id"},
	}}}
}

// exportsServer is a Payments server whose Pay, an export, holds each call
// until the test lets one of its user's calls out (a send on
// release[user]) or the call ends; it panics instead when panicNext is set.
type exportsServer struct {
	testpb.UnimplementedPaymentsServer
	inside    chan string // the user of each call, as it enters
	release   map[string]chan struct{}
	panicNext atomic.Bool
}

func newExportsServer(users ...string) *exportsServer {
	e := &exportsServer{inside: make(chan string, 100), release: make(map[string]chan struct{})}
	for _, u := range users {
		e.release[u] = make(chan struct{})
	}
	return e
}

func (e *exportsServer) Pay(ctx context.Context, _ *testpb.PayRequest) (*testpb.PayReply, error) {
	user := ""
	if v := metadata.ValueFromIncomingContext(ctx, "x-user-id"); len(v) == 1 {
		user = v[0]
	}
	e.inside <- user
	if e.panicNext.Swap(false) {
		panic("export failed")
	}
	select {
	case <-e.release[user]:
		return &testpb.PayReply{Status: "exported"}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

// wantEntered waits for the next call to enter Pay, and checks that it is
// user's.
func wantEntered(t *testing.T, e *exportsServer, user string) {
	t.Helper()
	select {
	case got := <-e.inside:
		if got != user {
			t.Fatalf("a call of %s entered, want %s", got, user)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no call of %s entered the method", user)
	}
}

// wantOverLimit checks the refusal of a call over the limit: Aborted, a
// RetryInfo of (0, maxDelay], and a QuotaFailure naming the method, the
// key spec and the permits.
func wantOverLimit(t *testing.T, err error, permits int64, maxDelay time.Duration) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != codes.Aborted {
		t.Fatalf("over the limit: %v, want Aborted", err)
	}
	var (
		retry *errdetails.RetryInfo
		quota *errdetails.QuotaFailure
	)
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			retry = d
		case *errdetails.QuotaFailure:
			quota = d
		}
	}
	if retry == nil || retry.RetryDelay.AsDuration() <= 0 || retry.RetryDelay.AsDuration() > maxDelay {
		t.Fatalf("Aborted without a RetryInfo of (0, %v]: %v", maxDelay, st.Details())
	}
	if quota == nil || len(quota.Violations) != 1 {
		t.Fatalf("Aborted without one QuotaFailure violation: %v", st.Details())
	}
	v := quota.Violations[0]
	if v.Subject != payMethod || v.QuotaValue != permits || v.QuotaMetric != interceptor.QuotaMetric ||
		!strings.Contains(v.Description, "metadata:x-user-id") {
		t.Fatalf("QuotaFailure %v: want subject %s, value %d, the metric and the key spec", v, payMethod, permits)
	}
}

// TestLimitCapsConcurrentCallsPerKey: with Permits 2, two concurrent calls
// of one user are served, the third is Aborted with RetryInfo and
// QuotaFailure, another user is unaffected, and once one call finishes a
// new one is served; through a real gRPC server on 127.0.0.1, on go-zero's
// store and a go-redis client on one redis-server, and on go-zero's store
// on Cluster. The refusal is counted as limited.
func TestLimitCapsConcurrentCallsPerKey(t *testing.T) {
	prometheus.Enable()
	srv := redistest.Start(t)
	cluster := redistest.SharedCluster(t)
	for _, tc := range []struct {
		name string
		new  func(interceptor.LockConf) (grpc.UnaryServerInterceptor, error)
	}{
		{"go-zero store", func(c interceptor.LockConf) (grpc.UnaryServerInterceptor, error) {
			return interceptor.UnaryServerInterceptor(c, newStore(srv))
		}},
		{"go-redis client", func(c interceptor.LockConf) (grpc.UnaryServerInterceptor, error) {
			return interceptor.UnaryServerInterceptorWithBackend(c, redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups()))
		}},
		{"go-zero cluster store", func(c interceptor.LockConf) (grpc.UnaryServerInterceptor, error) {
			return interceptor.UnaryServerInterceptor(c, zredis.MustNewRedis(zredis.RedisConf{
				Host: strings.Join(cluster.Addrs(), ","), Type: zredis.ClusterType, NonBlock: true, DisableIdentity: true,
			}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lock, err := tc.new(limitConf(2))
			if err != nil {
				t.Fatal(err)
			}
			e := newExportsServer("alice", "bob")
			client := serveWith(t, lock, e)
			acquired, limited := requests(t, payMethod, "acquired"), requests(t, payMethod, "limited")

			alice := make(chan error, 3)
			for i := 0; i < 2; i++ {
				go func() { _, err := client.Pay(withUser("alice"), order("E-1")); alice <- err }()
			}
			wantEntered(t, e, "alice")
			wantEntered(t, e, "alice")
			_, err = client.Pay(withUser("alice"), order("E-1"))
			// The first permit frees by expiry within Expire, 5s.
			wantOverLimit(t, err, 2, 5*time.Second)

			bob := make(chan error, 1)
			go func() { _, err := client.Pay(withUser("bob"), order("E-1")); bob <- err }()
			wantEntered(t, e, "bob")
			e.release["bob"] <- struct{}{}
			if err := <-bob; err != nil {
				t.Fatalf("another user while alice is at her limit: %v", err)
			}

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
			if got := requests(t, payMethod, "acquired") - acquired; got != 4 {
				t.Errorf("acquired counted %v times, want 4", got)
			}
			if got := requests(t, payMethod, "limited") - limited; got != 1 {
				t.Errorf("limited counted %v times, want 1", got)
			}
		})
	}
	if keys := srv.Client(t).Keys(context.Background(), "zerolock:*").Val(); len(keys) != 0 {
		t.Fatalf("permits left in Redis after every call ended: %v", keys)
	}
}

// TestLimitReleasesOnPanic: a panicking call frees its permit, so the next
// one is served.
func TestLimitReleasesOnPanic(t *testing.T) {
	srv := redistest.Start(t)
	e := newExportsServer("alice")
	close(e.release["alice"])
	client := serve(t, limitConf(1), newStore(srv), e)
	e.panicNext.Store(true)
	if _, err := client.Pay(withUser("alice"), order("E-1")); status.Code(err) != codes.Internal {
		t.Fatalf("panicking call: %v, want Internal from the recover interceptor", err)
	}
	if _, err := client.Pay(withUser("alice"), order("E-1")); err != nil {
		t.Fatalf("after a panic the permit was kept: %v", err)
	}
	if keys := srv.Client(t).Keys(context.Background(), "zerolock:*").Val(); len(keys) != 0 {
		t.Fatalf("permits left in Redis: %v", keys)
	}
}

// TestLimitReleasesOnDeadline: a call whose deadline passes frees its
// permit when the method returns, so a new call is served.
func TestLimitReleasesOnDeadline(t *testing.T) {
	srv := redistest.Start(t)
	e := newExportsServer("alice") // nobody releases alice: each call runs until its deadline
	client := serve(t, limitConf(1), newStore(srv), e)
	call := func() error {
		ctx, cancel := context.WithTimeout(withUser("alice"), 200*time.Millisecond)
		defer cancel()
		_, err := client.Pay(ctx, order("E-1"))
		return err
	}
	if err := call(); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("a call past its deadline: %v, want DeadlineExceeded", err)
	}
	wantEntered(t, e, "alice")
	// The permit is released just after the method returns, which may be a
	// moment after the client saw its deadline pass.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := call()
		if status.Code(err) == codes.DeadlineExceeded { // served, and timed out in turn
			wantEntered(t, e, "alice")
			break
		}
		if status.Code(err) != codes.Aborted || time.Now().After(deadline) {
			t.Fatalf("after the timed-out call: %v, want it served", err)
		}
	}
}

// TestLimitRenewKeepsPermit: with Renew, a long call keeps its 300 ms
// permit past its expiry, and its context is not cancelled.
func TestLimitRenewKeepsPermit(t *testing.T) {
	srv := redistest.Start(t)
	c := limitConf(1)
	c.Expire, c.Renew = 300*time.Millisecond, true
	e := newExportsServer("alice")
	client := serve(t, c, newStore(srv), e)
	first := make(chan error, 1)
	go func() { _, err := client.Pay(withUser("alice"), order("E-1")); first <- err }()
	wantEntered(t, e, "alice")
	time.Sleep(time.Second) // over three expiries: time must pass for a renewal to matter
	_, err := client.Pay(withUser("alice"), order("E-1"))
	wantOverLimit(t, err, 1, 300*time.Millisecond)
	e.release["alice"] <- struct{}{}
	if err := <-first; err != nil {
		t.Fatalf("the renewed call: %v (its context must live)", err)
	}
	go func() { _, err := client.Pay(withUser("alice"), order("E-1")); first <- err }()
	wantEntered(t, e, "alice")
	e.release["alice"] <- struct{}{}
	if err := <-first; err != nil {
		t.Fatalf("a call after the renewed one: %v", err)
	}
}

// Limit mode loads from YAML, Permits on the rule or as the
// configuration's default.
func TestLimitConfFromYAML(t *testing.T) {
	var c interceptor.LockConf
	err := conf.LoadFromYamlBytes([]byte(`
Mode: limit
Permits: 2
Rules:
  - Method: /zerolock.test.Payments/Pay
    Keys: [metadata:x-user-id]
  - Method: /zerolock.test.Payments/Refund
    Keys: [metadata:x-user-id]
    Permits: 5
`), &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != interceptor.ModeLimit || c.Permits != 2 || c.Rules[1].Permits != 5 {
		t.Fatalf("loaded %+v", c)
	}
	if _, err := interceptor.UnaryServerInterceptorWithBackend(c, redislock.NewBackend(redistest.Start(t).Client(t), redislock.WithoutWakeups())); err != nil {
		t.Fatal(err)
	}
}

// What limit mode cannot do is refused at start-up with an error that
// says why.
func TestLimitConfigRefused(t *testing.T) {
	limit := func(r interceptor.LockRule, change ...func(*interceptor.LockConf)) interceptor.LockConf {
		r.Method, r.Keys = payMethod, []string{"metadata:x-user-id"}
		return oneRule(r, change...)
	}
	limitMode := interceptor.LockRule{Mode: interceptor.ModeLimit, Permits: 2}
	checkConfigCases(t, []configCase{
		{"permits", limit(limitMode), false, ""},
		{"default permits", limit(interceptor.LockRule{Mode: interceptor.ModeLimit}, func(c *interceptor.LockConf) { c.Permits = 2 }), false, ""},
		{"renew", limit(limitMode, func(c *interceptor.LockConf) { c.Renew = true }), false, ""},
		{"no permits", limit(interceptor.LockRule{Mode: interceptor.ModeLimit}), false, "limit mode needs Permits of at least 1"},
		{"negative permits", limit(interceptor.LockRule{Mode: interceptor.ModeLimit, Permits: -3}), false, "Permits -3"},
		{"permits in inflight mode", limit(interceptor.LockRule{Permits: 2}), false, "Permits is for limit mode only"},
		{"permits in replay mode", limit(interceptor.LockRule{Mode: interceptor.ModeReplay, Permits: 2}), false, "Permits is for limit mode only"},
		{"fence", limit(limitMode, func(c *interceptor.LockConf) { c.Fence = true }), false, "Fence cannot be used in limit mode"},
		{"replay settings", limit(interceptor.LockRule{Mode: interceptor.ModeLimit, Permits: 2, Retain: time.Hour}), false, "replay mode"},
		{"redlock", limit(limitMode), true, "use a Redis store backend"},
	})
}

// serveZrpc runs a zrpc server on 127.0.0.1 with lock and extra after
// zrpc's own interceptors (recover, breaker, stat...), serving impl, and
// returns a zrpc client to it, with zrpc's client breaker; both stop when
// the test ends.
func serveZrpc(t *testing.T, impl testpb.PaymentsServer, interceptors ...grpc.UnaryServerInterceptor) testpb.PaymentsClient {
	t.Helper()
	return serveZrpcConf(t, zrpcConf(t), impl, nil, interceptors...)
}

// exhaustRefunds answers every Refund with ResourceExhausted: the code a
// quota refusal would use, which go-zero counts against the server.
func exhaustRefunds(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if strings.HasSuffix(info.FullMethod, "/Refund") {
		return nil, status.Error(codes.ResourceExhausted, "quota exhausted")
	}
	return h(ctx, req)
}

// TestLimitRefusalsKeepZrpcBreakerClosed: through a zrpc server and a zrpc
// client, whose breakers (client and server side) count go-zero's
// unacceptable codes as failures, 50 calls over the limit are all refused
// by the interceptor (Aborted), none by a breaker, and the next call after
// a permit frees is served. The control: 50 ResourceExhausted answers on
// the same client open a breaker, so this harness sees one open.
func TestLimitRefusalsKeepZrpcBreakerClosed(t *testing.T) {
	srv := redistest.Start(t)
	e := newExportsServer("alice")
	lock := interceptor.MustUnaryServerInterceptor(limitConf(1), newStore(srv))
	client := serveZrpc(t, e, exhaustRefunds, lock)

	held := make(chan error, 1)
	go func() { _, err := client.Pay(withUser("alice"), order("E-1")); held <- err }()
	wantEntered(t, e, "alice")
	for i := 0; i < 50; i++ {
		_, err := client.Pay(withUser("alice"), order("E-1"))
		if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "too many calls at once") {
			t.Fatalf("refusal %d over the limit: %v, want the interceptor's Aborted (not a breaker's)", i+1, err)
		}
	}
	e.release["alice"] <- struct{}{}
	if err := <-held; err != nil {
		t.Fatalf("the admitted call: %v", err)
	}
	go func() { _, err := client.Pay(withUser("alice"), order("E-1")); held <- err }()
	wantEntered(t, e, "alice")
	e.release["alice"] <- struct{}{}
	if err := <-held; err != nil {
		t.Fatalf("a call after 50 refusals: %v, want it served (breaker closed)", err)
	}

	// The control: ResourceExhausted opens a breaker within 100 calls. The
	// breaker drops at random, with a probability that nears 1 as failures
	// pile up: missing it 100 times is out of reach.
	for i := 0; i < 100; i++ {
		_, err := client.Refund(withUser("alice"), order("E-1"))
		if errors.Is(err, breaker.ErrServiceUnavailable) || strings.Contains(err.Error(), breaker.ErrServiceUnavailable.Error()) {
			t.Logf("ResourceExhausted opened a breaker after %d calls: %v", i, err)
			return
		}
		if status.Code(err) != codes.ResourceExhausted {
			t.Fatalf("Refund: %v, want ResourceExhausted or an open breaker", err)
		}
	}
	t.Fatal("100 ResourceExhausted answers left the breakers closed: this harness cannot see a breaker open")
}
