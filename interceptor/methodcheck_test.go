package interceptor_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/logx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
	"github.com/zerolock/zerolock/redislock"
)

// build constructs the interceptor for rules without a Redis server: the
// client is never used, since nothing is called.
func build(t *testing.T, rules ...interceptor.LockRule) error {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	_, err := interceptor.UnaryServerInterceptorWithBackend(interceptor.LockConf{Rules: rules}, redislock.NewBackend(rdb, redislock.WithoutWakeups()))
	return err
}

func wantBadConfig(t *testing.T, err error, mentions ...string) {
	t.Helper()
	if !errors.Is(err, interceptor.ErrBadConfig) {
		t.Fatalf("err = %v, want ErrBadConfig", err)
	}
	for _, m := range mentions {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error does not mention %q: %v", m, err)
		}
	}
}

// TestRuleForUnlinkedService: the README's /payments.Payments/Pay copied
// into a service whose proto package is another would lock nothing; it is
// refused at start-up, naming the rule, the method that is linked, and
// the fix.
func TestRuleForUnlinkedService(t *testing.T) {
	err := build(t, interceptor.LockRule{Method: "/payments.Payments/Pay", Keys: []string{"field:order.id", "metadata:x-user-id"}})
	wantBadConfig(t, err, "rule /payments.Payments/Pay", "no service linked into this binary is named payments.Payments",
		"did you mean /zerolock.test.Payments/Pay?", "SkipMethodCheck")

	err = build(t, interceptor.LockRule{Method: "/payments.Payments/Settle", Keys: []string{"peer"}})
	wantBadConfig(t, err, "rule /payments.Payments/Settle", "none has a method Settle")
}

// TestRuleForMissingMethod: a linked service without the rule's method is
// refused with the methods it has.
func TestRuleForMissingMethod(t *testing.T) {
	err := build(t, interceptor.LockRule{Method: "/zerolock.test.Payments/Charge", Keys: []string{"peer"}})
	wantBadConfig(t, err, "rule /zerolock.test.Payments/Charge", "has no method Charge",
		"/zerolock.test.Payments/Pay", "/zerolock.test.Payments/Refund")
}

// TestRuleForStreamingMethod: the health service's Watch streams, so a
// unary interceptor never sees it, and a rule for it would lock nothing.
func TestRuleForStreamingMethod(t *testing.T) {
	err := build(t, interceptor.LockRule{Method: "/grpc.health.v1.Health/Watch", Keys: []string{"peer"}})
	wantBadConfig(t, err, "rule /grpc.health.v1.Health/Watch", "streaming")
}

// TestSkipMethodCheck: a rule for a method that no linked service
// declares is accepted with SkipMethodCheck (TestRuleForUnlinkedService
// shows it refused without), and its field paths are checked on the
// method's first call: a wrong path fails that call, and every later one,
// with codes.Internal naming the rule, before the handler; a right one
// locks, as a rule of a linked method does. The methods are served by a
// service registered at run time, as a proxy or a dynamicpb service is.
func TestSkipMethodCheck(t *testing.T) {
	const (
		pay    = "/payments.Payments/Pay"
		settle = "/payments.Payments/Settle"
	)
	if err := build(t, interceptor.LockRule{Method: pay, Keys: []string{"field:order.id", "peer"}, SkipMethodCheck: true}); err != nil {
		t.Fatalf("rule with SkipMethodCheck: %v", err)
	}

	srv := redistest.Start(t)
	lock, err := interceptor.UnaryServerInterceptor(interceptor.LockConf{Rules: []interceptor.LockRule{
		{Method: pay, Keys: []string{"field:order.id", "peer"}, SkipMethodCheck: true},
		{Method: settle, Keys: []string{"field:order.nope", "peer"}, SkipMethodCheck: true},
	}}, newStore(srv))
	if err != nil {
		t.Fatalf("rules with SkipMethodCheck: %v", err)
	}
	impl := newPayments()
	impl.release = make(chan struct{})
	conn := serveAtRunTime(t, lock, impl, "payments.Payments", "Pay", "Settle")
	call := func(method, id string) error {
		return conn.Invoke(context.Background(), method, order(id), new(testpb.PayReply))
	}

	for i := 0; i < 2; i++ {
		err := call(settle, "S-1")
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "rule "+settle) || !strings.Contains(err.Error(), "order.nope") {
			t.Fatalf("call %d with a wrong path: %v, want Internal naming the rule %s and its path", i, err, settle)
		}
	}
	if n := impl.entered.Load(); n != 0 {
		t.Fatalf("the handler ran %d times for a rule with a wrong path, want 0", n)
	}

	first := make(chan error, 1)
	go func() { first <- call(pay, "P-1") }()
	<-impl.inside
	if err := call(pay, "P-1"); status.Code(err) != codes.Aborted {
		t.Fatalf("duplicate while the first is in its handler: %v, want Aborted", err)
	}
	impl.release <- struct{}{}
	if err := <-first; err != nil {
		t.Fatalf("the first call: %v", err)
	}
	close(impl.release)
	if err := call(pay, "P-1"); err != nil {
		t.Fatalf("the same call after the first completed: %v, want it to pass (released)", err)
	}
	if n := impl.entered.Load(); n != 2 {
		t.Fatalf("the handler ran %d times, want 2 (the duplicate refused)", n)
	}
}

// serveAtRunTime serves impl's Pay as the methods of service, registered
// from a descriptor built here, not generated, so that no linked service
// declares them, on a real server on 127.0.0.1:0 with lock; it returns a
// client connection, and both stop when the test ends.
func serveAtRunTime(t *testing.T, lock grpc.UnaryServerInterceptor, impl testpb.PaymentsServer, service string, methods ...string) *grpc.ClientConn {
	t.Helper()
	desc := grpc.ServiceDesc{ServiceName: service, HandlerType: (*testpb.PaymentsServer)(nil)}
	for _, name := range methods {
		full := "/" + service + "/" + name
		desc.Methods = append(desc.Methods, grpc.MethodDesc{
			MethodName: name,
			Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
				req := new(testpb.PayRequest)
				if err := dec(req); err != nil {
					return nil, err
				}
				pay := func(ctx context.Context, req any) (any, error) {
					return srv.(testpb.PaymentsServer).Pay(ctx, req.(*testpb.PayRequest))
				}
				return icpt(ctx, req, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, pay)
			},
		})
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(lock))
	s.RegisterService(&desc, impl)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// TestCheckServed: a server that registers Payments serves both rules; a
// server of the same binary that registers only the health service
// serves neither, as when a Lock section is copied into another service
// that links the same protos.
func TestCheckServed(t *testing.T) {
	payments := grpc.NewServer()
	testpb.RegisterPaymentsServer(payments, newPayments())
	t.Cleanup(payments.Stop)
	other := grpc.NewServer()
	healthpb.RegisterHealthServer(other, health.NewServer())
	t.Cleanup(other.Stop)

	c := interceptor.LockConf{Rules: []interceptor.LockRule{
		{Method: payMethod, Keys: []string{"field:order.id", "metadata:x-user-id"}},
		{Method: "/zerolock.test.Payments/Refund", Keys: []string{"field:order.id", "metadata:x-user-id"}},
		{Method: "/dynamic.Proxy/Forward", SkipMethodCheck: true},
	}}
	if err := build(t, c.Rules...); err != nil {
		t.Fatal(err)
	}
	if err := interceptor.CheckServed(payments, c); err != nil {
		t.Fatalf("the server that registers Payments: %v", err)
	}

	err := interceptor.CheckServed(other, c)
	wantBadConfig(t, err, "rule /zerolock.test.Payments/Pay", "rule /zerolock.test.Payments/Refund",
		"does not serve zerolock.test.Payments", "it serves grpc.health.v1.Health", "after registering")
	if strings.Contains(err.Error(), "Forward") {
		t.Errorf("a SkipMethodCheck rule was checked: %v", err)
	}

	err = interceptor.CheckServed(other, interceptor.LockConf{Rules: []interceptor.LockRule{{Method: "/grpc.health.v1.Health/Watch"}}})
	wantBadConfig(t, err, "rule /grpc.health.v1.Health/Watch", "streaming")

	for _, tc := range []struct {
		method   string
		mentions []string
	}{
		{"/zerolock.test.Payments/Charge", []string{"has no method Charge", "/zerolock.test.Payments/Pay, /zerolock.test.Payments/Refund"}},
		{"/pay.Payments/Pay", []string{"does not serve pay.Payments", "did you mean /zerolock.test.Payments/Pay?"}},
		{"pay.Payments.Pay", []string{"/package.Service/Method"}},
	} {
		err := interceptor.CheckServed(payments, interceptor.LockConf{Rules: []interceptor.LockRule{{Method: tc.method}}})
		wantBadConfig(t, err, append([]string{"rule " + tc.method}, tc.mentions...)...)
	}
}

// TestCheckServedThenCall: CheckServed in the register hook, as in zrpc's
// callback, on a real server on 127.0.0.1:0; the rule it passes locks
// (Pay's duplicate is Aborted), and Refund, served without a rule, passes
// through.
func TestCheckServedThenCall(t *testing.T) {
	srv := redistest.Start(t)
	c := interceptor.LockConf{Rules: []interceptor.LockRule{{Method: payMethod, Keys: []string{"field:order.id", "metadata:x-user-id"}}}}
	lock, err := interceptor.UnaryServerInterceptor(c, newStore(srv))
	if err != nil {
		t.Fatal(err)
	}
	impl := newPayments()
	impl.release = make(chan struct{})
	var checked error
	client := serveRegistered(t, lock, impl, func(s *grpc.Server) { checked = interceptor.CheckServed(s, c) })
	if checked != nil {
		t.Fatal(checked)
	}
	first := make(chan error, 1)
	go func() { _, err := client.Pay(withUser("alice"), order("S-1")); first <- err }()
	<-impl.inside
	if _, err := client.Pay(withUser("alice"), order("S-1")); status.Code(err) != codes.Aborted {
		t.Fatalf("duplicate of a checked rule's method: %v, want Aborted", err)
	}
	if _, err := client.Refund(context.Background(), order("S-1")); status.Code(err) != codes.Unimplemented {
		t.Fatalf("Refund, served without a rule: %v, want the method's own Unimplemented", err)
	}
	close(impl.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
}

// TestSharedRuleWarning: a rule whose key has no per-caller part makes one
// caller's call block everybody's with the same field values; it is logged
// at error level (go-zero has no warning level), which services that log
// errors only still show.
func TestSharedRuleWarning(t *testing.T) {
	var buf bytes.Buffer
	logx.SetLevel(logx.ErrorLevel)
	logx.SetWriter(logx.NewWriter(&buf))
	t.Cleanup(logx.Disable)

	const warning = "zerolock: warning: lock rule /zerolock.test.Payments/Pay has no metadata:, ctx: or peer key"
	for _, tc := range []struct {
		keys   []string
		shared bool
	}{
		{[]string{"field:order.id"}, true},
		{nil, true},
		{[]string{"field:order.id", "metadata:x-user-id"}, false},
		{[]string{"field:order.id", "ctx:userId"}, false},
		{[]string{"field:order.id", "peer"}, false},
	} {
		buf.Reset()
		if err := build(t, interceptor.LockRule{Method: payMethod, Keys: tc.keys}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(buf.String(), warning); got != tc.shared {
			t.Errorf("keys %v: warned %v, want %v; log: %q", tc.keys, got, tc.shared, buf.String())
		}
	}
}
