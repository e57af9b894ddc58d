package interceptor_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// TestThroughZrpc: a zrpc.MustNewServer with the interceptor added, called
// by a zrpc client, runs one of two concurrent identical calls and answers
// the other Aborted; zrpc's own interceptors (recover, breaker, stat) are
// in the chain. CheckServed, in the register callback, passes the rule.
func TestThroughZrpc(t *testing.T) {
	srv := redistest.Start(t)
	impl := newPayments()
	impl.release = make(chan struct{})
	lockConf := payConf(interceptor.ModeInflight, "field:order.id", "metadata:x-user-id")
	client := serveZrpcConf(t, zrpcConf(t), impl, func(s *grpc.Server) error {
		return interceptor.CheckServed(s, lockConf) // a service would logx.Must it
	}, interceptor.MustUnaryServerInterceptor(lockConf, newStore(srv)))

	results := make(chan error, 2)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(withUser("alice"), 10*time.Second)
			defer cancel()
			_, err := client.Pay(ctx, order("Z-1"))
			results <- err
		}()
	}
	select {
	case <-impl.inside:
	case err := <-results:
		t.Fatalf("a call ended before any reached the method: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no call reached the method")
	}
	if err := <-results; status.Code(err) != codes.Aborted {
		t.Fatalf("the duplicate through zrpc: %v, want Aborted", err)
	}
	close(impl.release)
	wg.Wait()
	if err := <-results; err != nil {
		t.Fatalf("the admitted call through zrpc: %v", err)
	}
}

// zrpcConf is zrpc's default server configuration on a free 127.0.0.1
// port, without the DevServer (its HTTP server is never stopped).
func zrpcConf(t *testing.T) zrpc.RpcServerConf {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var sc zrpc.RpcServerConf
	if err := conf.FillDefault(&sc); err != nil {
		t.Fatal(err)
	}
	sc.Name, sc.ListenOn = "zerolock-test-rpc", addr
	sc.DevServer.Enabled = false
	return sc
}

// serveZrpcConf runs zrpc.MustNewServer(sc) serving impl, with
// interceptors after zrpc's own (recover, breaker, stat...), until the test
// ends, and returns a zrpc client to it, with zrpc's client breaker.
// registered, when not nil, runs in zrpc's register callback once impl is
// registered, as a service's CheckServed would; its error fails the test.
func serveZrpcConf(t *testing.T, sc zrpc.RpcServerConf, impl testpb.PaymentsServer,
	registered func(*grpc.Server) error, interceptors ...grpc.UnaryServerInterceptor) testpb.PaymentsClient {
	t.Helper()
	grpcServer := make(chan *grpc.Server, 1)
	checked := make(chan error, 1)
	server := zrpc.MustNewServer(sc, func(s *grpc.Server) {
		grpcServer <- s
		testpb.RegisterPaymentsServer(s, impl)
		if registered != nil {
			checked <- registered(s)
		} else {
			checked <- nil
		}
	})
	server.AddUnaryInterceptors(interceptors...)
	go server.Start()
	redistest.WaitListening(t, sc.ListenOn)
	gs := <-grpcServer
	// zrpc's Stop leaves serving to the process's shutdown; stop gRPC itself.
	t.Cleanup(func() {
		server.Stop()
		gs.Stop()
	})
	if err := <-checked; err != nil {
		t.Fatalf("in zrpc's register callback: %v", err)
	}

	var cc zrpc.RpcClientConf
	if err := conf.FillDefault(&cc); err != nil {
		t.Fatal(err)
	}
	cc.Endpoints, cc.Timeout = []string{sc.ListenOn}, 10000
	zc := zrpc.MustNewClient(cc)
	t.Cleanup(func() { _ = zc.Conn().Close() })
	return testpb.NewPaymentsClient(zc.Conn())
}
