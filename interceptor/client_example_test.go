package interceptor_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"sync"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	pb "github.com/zerolock/zerolock/internal/testing/testpb"
)

// restarting is a payments service whose first call fails Unavailable, as
// one that is restarting would, and which notes the idempotency key of
// every call.
type restarting struct {
	pb.UnimplementedPaymentsServer
	mu   sync.Mutex
	keys []string
}

func (s *restarting) Pay(ctx context.Context, _ *pb.PayRequest) (*pb.PayReply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, metadata.ValueFromIncomingContext(ctx, interceptor.IdempotencyKeyMetadata)...)
	if len(s.keys) == 1 {
		return nil, status.Error(codes.Unavailable, "restarting")
	}
	return &pb.PayReply{Status: "paid"}, nil
}

// A zrpc client with the interceptor retries a Pay that met a restarting
// server, with the key of its first attempt, so that a server interceptor
// keyed on metadata:idempotency-key runs the payment once.
func ExampleUnaryClientInterceptor() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	payments := &restarting{}
	server := grpc.NewServer()
	pb.RegisterPaymentsServer(server, payments)
	go func() { _ = server.Serve(l) }()
	defer server.Stop()

	// In a service, both come from its YAML:
	//
	//	PaymentsRpc:
	//	  Endpoints: [127.0.0.1:8080]
	//	Idempotency:
	//	  Methods: [/zerolock.test.Payments/Pay]
	//	  AttemptTimeout: 1s
	var rpc zrpc.RpcClientConf
	if err := conf.FillDefault(&rpc); err != nil {
		log.Fatal(err)
	}
	rpc.Endpoints = []string{l.Addr().String()}
	idempotency := interceptor.ClientConf{Methods: []string{"/zerolock.test.Payments/Pay"}}

	client := zrpc.MustNewClient(rpc, zrpc.WithUnaryClientInterceptor(interceptor.MustUnaryClientInterceptor(idempotency)))
	defer client.Conn().Close()
	reply, err := pb.NewPaymentsClient(client.Conn()).Pay(context.Background(), &pb.PayRequest{UserId: "u-1"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.Status, "after", len(payments.keys), "attempts with one key:", payments.keys[0] == payments.keys[1])
	// Output: paid after 2 attempts with one key: true
}

// A method that its service, linked into the binary, does not declare is
// refused at start-up, with the methods it does declare.
func ExampleUnaryClientInterceptor_badMethod() {
	_, err := interceptor.UnaryClientInterceptor(interceptor.ClientConf{Methods: []string{"/zerolock.test.Payments/Charge"}})
	fmt.Println(err)
	// Output: interceptor: bad lock configuration: ClientConf.Methods: /zerolock.test.Payments/Charge: service zerolock.test.Payments has no method Charge: set it to one of its methods (/zerolock.test.Payments/Pay, /zerolock.test.Payments/Refund)
}
