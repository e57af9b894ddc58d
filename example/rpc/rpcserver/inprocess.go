package rpcserver

import (
	"errors"
	"fmt"
	"net"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/logx"
	"google.golang.org/grpc"

	"github.com/zerolock/zerolock/example/rpc/internal/config"
	"github.com/zerolock/zerolock/example/rpc/internal/server"
	"github.com/zerolock/zerolock/example/rpc/internal/svc"
	"github.com/zerolock/zerolock/example/rpc/payments"
	"github.com/zerolock/zerolock/interceptor"
)

// InProcess is the Payments service running in this process, on a
// loopback port of its own.
type InProcess struct {
	addr   string
	server *grpc.Server
	svc    *svc.ServiceContext
}

// StartInProcess loads configFile (etc/rpc.yaml, environment variables
// expanded) and serves the Payments service it configures, with the same
// interceptors as `go run ./example/rpc`, on a free loopback port instead
// of ListenOn. It uses a plain gRPC server rather than zrpc's, which can
// only be stopped by stopping the process and, when stopped, closes the
// process's logs: so Close stops it, and the process's other servers run
// on. It returns the errors of loading the file, of the lock
// configuration, and of listening.
func StartInProcess(configFile string) (*InProcess, error) {
	var c config.Config
	if err := conf.Load(configFile, &c, conf.UseEnv()); err != nil {
		return nil, fmt.Errorf("payments service: %w", err)
	}
	ctx := svc.NewServiceContext(c)
	lock, err := interceptor.UnaryServerInterceptor(c.Lock, ctx.Redis)
	if err != nil {
		ctx.Close()
		return nil, fmt.Errorf("payments service: %w", err)
	}
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors(c, ctx, lock)...))
	payments.RegisterPaymentsServer(gs, server.NewPaymentsServer(ctx))
	if err := interceptor.CheckServed(gs, c.Lock); err != nil {
		ctx.Close()
		return nil, fmt.Errorf("payments service: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ctx.Close()
		return nil, fmt.Errorf("payments service: %w", err)
	}
	go func() {
		if err := gs.Serve(l); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			logx.Errorf("payments service: %v", err)
		}
	}()
	return &InProcess{addr: l.Addr().String(), server: gs, svc: ctx}, nil
}

// Addr is the host:port the service listens on.
func (p *InProcess) Addr() string {
	return p.addr
}

// Close stops the service, ending its calls, and its embedded miniredis,
// if it started one.
func (p *InProcess) Close() {
	p.server.Stop()
	p.svc.Close()
}
