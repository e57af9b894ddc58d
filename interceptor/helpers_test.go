package interceptor_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

func TestMain(m *testing.M) {
	redistest.Quiet()
	redistest.Main(m)
}

func newStore(srv *redistest.Server) *zredis.Redis {
	return zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	})
}

// payments is a Payments server whose Pay holds each call until released
// and then answers with err (or panics when panicNext is set).
type payments struct {
	testpb.UnimplementedPaymentsServer
	entered   atomic.Int32
	inside    chan struct{}
	release   chan struct{}
	err       atomic.Pointer[error]
	panicNext atomic.Bool
}

// failWith makes Pay answer err (nil: succeed).
func (p *payments) failWith(err error) {
	if err == nil {
		p.err.Store(nil)
		return
	}
	p.err.Store(&err)
}

func newPayments() *payments {
	p := &payments{inside: make(chan struct{}, 100), release: make(chan struct{})}
	close(p.release)
	return p
}

func (p *payments) Pay(ctx context.Context, req *testpb.PayRequest) (*testpb.PayReply, error) {
	p.entered.Add(1)
	p.inside <- struct{}{}
	<-p.release
	if p.panicNext.Swap(false) {
		panic("pay failed")
	}
	if err := p.err.Load(); err != nil {
		return nil, *err
	}
	return &testpb.PayReply{Status: "paid"}, nil
}

// recoverPanics stands in for zrpc's recover interceptor: a panic becomes
// codes.Internal instead of killing the test binary.
func recoverPanics(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = status.Errorf(codes.Internal, "panic: %v", p)
		}
	}()
	return h(ctx, req)
}

// authenticate stands in for a service's auth interceptor, placed before
// the lock: it puts the caller that the x-user-id metadata names (see
// withUser) in the context under "userId", where a ctx:userId key reads
// it. A call without that metadata passes as it came.
func authenticate(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if user := md.Get("x-user-id"); len(user) == 1 {
		//lint:ignore SA1029 a string key is what a ctx:userId key names
		ctx = context.WithValue(ctx, "userId", user[0])
	}
	return h(ctx, req)
}

// serve runs a real gRPC server on 127.0.0.1:0 with the interceptor and
// returns a client to it; both stop when the test ends.
func serve(t *testing.T, c interceptor.LockConf, store *zredis.Redis, impl testpb.PaymentsServer,
	outer ...grpc.UnaryServerInterceptor) testpb.PaymentsClient {
	t.Helper()
	lock, err := interceptor.UnaryServerInterceptor(c, store)
	if err != nil {
		t.Fatal(err)
	}
	return serveWith(t, lock, impl, outer...)
}

// serveWith is serve for an interceptor built already.
func serveWith(t testing.TB, lock grpc.UnaryServerInterceptor, impl testpb.PaymentsServer,
	outer ...grpc.UnaryServerInterceptor) testpb.PaymentsClient {
	t.Helper()
	return serveRegistered(t, lock, impl, nil, outer...)
}

// serveRegistered is serveWith that runs registered, when not nil, once
// impl is registered and before serving, as zrpc runs its register
// callback.
func serveRegistered(t testing.TB, lock grpc.UnaryServerInterceptor, impl testpb.PaymentsServer,
	registered func(*grpc.Server), outer ...grpc.UnaryServerInterceptor) testpb.PaymentsClient {
	t.Helper()
	conn, err := grpc.NewClient(serveAddr(t, lock, impl, registered, outer...), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return testpb.NewPaymentsClient(conn)
}

// serveAddr runs the server of serveRegistered until the test ends and
// returns its address, for a client of the test's own (a gateway's).
func serveAddr(t testing.TB, lock grpc.UnaryServerInterceptor, impl testpb.PaymentsServer,
	registered func(*grpc.Server), outer ...grpc.UnaryServerInterceptor) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(append([]grpc.UnaryServerInterceptor{recoverPanics}, append(outer, lock)...)...))
	testpb.RegisterPaymentsServer(s, impl)
	if registered != nil {
		registered(s)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().String()
}
