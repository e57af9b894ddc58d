// Package rpcserver builds example/rpc's Payments service: for its main,
// on a zrpc server, and in another process's own, on a plain gRPC server
// (StartInProcess), so that example/api runs it beside itself when it is
// configured with no payments endpoint.
package rpcserver

import (
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

// New builds the zrpc server as goctl would, plus the interceptors: the
// demo's lost-answer switch (when c.LoseAnswers), the demo's auth, which
// puts the user id in the context, then zerolock's. Configuration errors
// exit through logx.Must, as go-zero's MustNew functions do.
func New(c config.Config) (*zrpc.RpcServer, *svc.ServiceContext) {
	ctx := svc.NewServiceContext(c)
	s := zrpc.MustNewServer(c.RpcServerConf, func(grpcServer *grpc.Server) {
		payments.RegisterPaymentsServer(grpcServer, server.NewPaymentsServer(ctx))
		// A lock rule for a method this server does not serve fails here.
		logx.Must(interceptor.CheckServed(grpcServer, c.Lock))
		if c.Mode == service.DevMode || c.Mode == service.TestMode {
			reflection.Register(grpcServer)
		}
	})
	s.AddUnaryInterceptors(interceptors(c, ctx, interceptor.MustUnaryServerInterceptor(c.Lock, ctx.Redis))...)
	return s, ctx
}

// interceptors is the chain of the service's own unary interceptors,
// outermost first, around lock (zerolock's): the lost-answer switch must
// wrap zerolock's interceptor, so that the answer it drops was stored.
func interceptors(c config.Config, ctx *svc.ServiceContext, lock grpc.UnaryServerInterceptor) []grpc.UnaryServerInterceptor {
	var chain []grpc.UnaryServerInterceptor
	if c.LoseAnswers {
		chain = append(chain, newAnswerLoser().intercept)
	}
	return append(chain, auth.UnaryServerInterceptor, lock)
}
