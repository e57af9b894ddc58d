// Command rpc is a zrpc service that shows zerolock's interceptor: the same
// payment called twice while the first runs is answered Aborted. Run it
// from the repository root, then the client:
//
//	go run ./example/rpc          # embedded miniredis, listens on 127.0.0.1:8080
//	go run ./example/rpc/client   # sends one payment twice at once
package main

import (
	"flag"
	"fmt"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/service"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	"github.com/zerolock/zerolock/example/rpc/internal/auth"
	"github.com/zerolock/zerolock/example/rpc/internal/config"
	"github.com/zerolock/zerolock/example/rpc/internal/server"
	"github.com/zerolock/zerolock/example/rpc/internal/svc"
	"github.com/zerolock/zerolock/example/rpc/payments"
	"github.com/zerolock/zerolock/interceptor"
)

var configFile = flag.String("f", "etc/rpc.yaml", "the config file")

func main() {
	flag.Parse()

	var c config.Config
	conf.MustLoad(*configFile, &c, conf.UseEnv())
	s, ctx := newServer(c)
	defer ctx.Close()
	defer s.Stop()

	fmt.Printf("Starting rpc server at %s...\n", c.ListenOn)
	s.Start()
}

// newServer builds the zrpc server as goctl would, plus the two interceptors:
// the demo's auth, which puts the user id in the context, then zerolock's.
func newServer(c config.Config) (*zrpc.RpcServer, *svc.ServiceContext) {
	ctx := svc.NewServiceContext(c)
	s := zrpc.MustNewServer(c.RpcServerConf, func(grpcServer *grpc.Server) {
		payments.RegisterPaymentsServer(grpcServer, server.NewPaymentsServer(ctx))
		// A lock rule for a method this server does not serve fails here.
		logx.Must(interceptor.CheckServed(grpcServer, c.Lock))
		if c.Mode == service.DevMode || c.Mode == service.TestMode {
			reflection.Register(grpcServer)
		}
	})
	s.AddUnaryInterceptors(
		auth.UnaryServerInterceptor,
		interceptor.MustUnaryServerInterceptor(c.Lock, ctx.Redis),
	)
	return s, ctx
}
