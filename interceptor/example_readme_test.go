package interceptor_test

// The README's interceptor snippets (the Config and zrpc wiring under "RPC
// idempotency interceptor" and the zrpc fragment of "From goctl") are
// lines of this file or of example/rpc: the root package's
// TestReadmeGoBlocks fails when a README line is found in no compiled
// source it lists.

import (
	"context"
	"fmt"
	"net"

	"github.com/alicebob/miniredis/v2"
	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	// pb stands for the service's generated code. The example uses the
	// tests' proto: linking the demo's payments.Payments into this package
	// would defeat the tests of a rule for a service that is not linked.
	pb "github.com/zerolock/zerolock/internal/testing/testpb"
)

// Config is a zrpc service's configuration with the interceptor's. The
// lock's Redis is not called Redis: zrpc.RpcServerConf has a Redis field
// of its own, for zrpc's auth.
type Config struct {
	zrpc.RpcServerConf
	LockRedis redis.RedisConf
	Lock      interceptor.LockConf
}

// rpcYAML is the service's etc/rpc.yaml, listening on %s with the
// lock's Redis at %s.
const rpcYAML = `
Name: payments
ListenOn: %s
DevServer:
  Enabled: false
LockRedis:
  Host: %s
  Type: node
  DisableIdentity: true   # miniredis rejects CLIENT SETINFO, as redis-server before 7.2 does
Lock:
  Expire: 5s
  Rules:
    - Method: /zerolock.test.Payments/Pay
      Keys: [field:order.id, metadata:x-user-id]
`

// paymentsServer pays an order; each Pay waits for release, so that a
// duplicate can arrive while the first call runs.
type paymentsServer struct {
	pb.UnimplementedPaymentsServer
	inside, release chan struct{}
}

func (p *paymentsServer) Pay(ctx context.Context, in *pb.PayRequest) (*pb.PayReply, error) {
	p.inside <- struct{}{}
	<-p.release
	return &pb.PayReply{Status: "paid " + in.GetOrder().GetId()}, nil
}

// A zrpc server with the interceptor: CheckServed, in the register
// callback, checks that the server serves every rule's method, and a call
// that arrives while the same call runs is answered Aborted.
func ExampleMustUnaryServerInterceptor() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port for the example
	if err != nil {
		fmt.Println(err)
		return
	}
	addr := l.Addr().String()
	l.Close()
	var c Config
	if err := conf.LoadFromYamlBytes([]byte(fmt.Sprintf(rpcYAML, addr, mr.Addr())), &c); err != nil {
		fmt.Println(err)
		return
	}
	srv := &paymentsServer{inside: make(chan struct{}, 1), release: make(chan struct{})}
	served := make(chan *grpc.Server, 1)

	s := zrpc.MustNewServer(c.RpcServerConf, func(grpcServer *grpc.Server) {
		pb.RegisterPaymentsServer(grpcServer, srv)
		logx.Must(interceptor.CheckServed(grpcServer, c.Lock)) // a rule for a method not served here fails
		served <- grpcServer
	})
	s.AddUnaryInterceptors(interceptor.MustUnaryServerInterceptor(c.Lock, redis.MustNewRedis(c.LockRedis)))
	go s.Start()
	// zrpc's Stop leaves serving to the process's shutdown; stop gRPC itself.
	defer (<-served).Stop()

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()
	client := pb.NewPaymentsClient(conn)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-user-id", "alice")
	pay := func() (*pb.PayReply, error) {
		return client.Pay(ctx, &pb.PayRequest{Order: &pb.Order{Id: "o-1"}}, grpc.WaitForReady(true))
	}

	first := make(chan error, 1)
	go func() {
		resp, err := pay()
		if err == nil {
			fmt.Println("first call:", resp.GetStatus())
		}
		first <- err
	}()
	<-srv.inside // the first call runs
	_, err = pay()
	fmt.Println("second call:", status.Code(err))
	close(srv.release)
	fmt.Println(<-first)
	// Output:
	// second call: Aborted
	// first call: paid o-1
	// <nil>
}
