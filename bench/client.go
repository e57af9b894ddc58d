package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/grpc"

	"github.com/zerolock/zerolock/interceptor"
	rawfloor "github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/internal/testing/stubbackend"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// The client scenarios measure what the client interceptor adds to a call
// on its happy path (one attempt, no retry): the same zrpc call to Pay, on
// a server that answers at once without reading the key, made through a
// zrpc client with the interceptor and through one without it. Outside a
// served request the key is random; inside one it is derived (SHA-256)
// from the request's key.
const (
	clientScenario       = "gRPC client interceptor, 50 clients"
	servedClientScenario = "gRPC client interceptor in a served request, 50 clients"

	// withoutClientInterceptor is the client scenarios' baseline.
	withoutClientInterceptor = "zrpc client, no interceptor"

	payMethod = "/zerolock.test.Payments/Pay"
)

// clientContenders are the client scenarios' runs: the baseline first.
var clientContenders = []struct {
	name        string
	intercepted bool
}{
	{withoutClientInterceptor, false},
	{"zrpc client + interceptor", true},
}

// clientBench is a Payments server with no interceptor, whose Pay answers
// at once, and two zrpc clients of it, one with the client interceptor on
// Pay; serve is a server interceptor guarding Pay on a backend whose locks
// hold nothing, run in-process around a handler that makes the call, so
// that the call is made in a served request's context.
type clientBench struct {
	server      *grpc.Server
	plain, with zrpc.Client
	serve       grpc.UnaryServerInterceptor
}

func startClients() (*clientBench, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := grpc.NewServer()
	testpb.RegisterPaymentsServer(s, rawfloor.Payments{}) // Pay touches neither Redis nor the key
	go func() { _ = s.Serve(l) }()
	// A stub backend, so that the served request costs both rows the
	// same few microseconds and no Redis round trip.
	serve, err := interceptor.UnaryServerInterceptorWithBackend(interceptor.LockConf{Rules: []interceptor.LockRule{{
		Method: payMethod, Keys: []string{"field:order.id"},
	}}}, stubbackend.Recorders())
	if err != nil {
		s.Stop()
		return nil, err
	}
	client := func(opts ...zrpc.ClientOption) (zrpc.Client, error) {
		var c zrpc.RpcClientConf
		if err := conf.FillDefault(&c); err != nil {
			return nil, err
		}
		c.Endpoints = []string{l.Addr().String()}
		return zrpc.NewClient(c, opts...)
	}
	b := &clientBench{server: s, serve: serve}
	if b.plain, err = client(); err != nil {
		b.stop()
		return nil, err
	}
	ic, err := interceptor.UnaryClientInterceptor(interceptor.ClientConf{Methods: []string{payMethod}})
	if err == nil {
		b.with, err = client(zrpc.WithUnaryClientInterceptor(ic))
	}
	if err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

func (b *clientBench) stop() {
	for _, c := range []zrpc.Client{b.plain, b.with} {
		if c != nil {
			_ = c.Conn().Close()
		}
	}
	b.server.Stop()
}

// run calls Pay with distinct orders through the client with the
// interceptor or the one without; served makes each call from the handler
// of a request that serve guards.
func (b *clientBench) run(intercepted, served bool, round int, d time.Duration) sample {
	client := testpb.NewPaymentsClient(b.plain.Conn())
	if intercepted {
		client = testpb.NewPaymentsClient(b.with.Conn())
	}
	info := &grpc.UnaryServerInfo{FullMethod: payMethod}
	handler := func(ctx context.Context, req any) (any, error) {
		return client.Pay(ctx, req.(*testpb.PayRequest))
	}
	var next atomic.Int64
	return drive(serverClients, d, func(int) func(context.Context) error {
		return func(ctx context.Context) error {
			// The run's end cuts no call: zrpc logs each failed call, at
			// the error level the REST server's log setup turned back on.
			ctx = context.WithoutCancel(ctx)
			id := "r" + strconv.Itoa(round) + "-" + strconv.FormatInt(next.Add(1), 10)
			req := &testpb.PayRequest{Order: &testpb.Order{Id: id}}
			var err error
			if served {
				_, err = b.serve(ctx, req, info, handler)
			} else {
				_, err = handler(ctx, req)
			}
			return err
		}
	})
}

// runClients runs one round of the selected client scenarios, each with a
// warm-up and its two contenders back to back, their order turning by one
// each round.
func runClients(b *clientBench, rep *report, r int, d time.Duration) {
	for _, sc := range []struct {
		name   string
		served bool
	}{{clientScenario, false}, {servedClientScenario, true}} {
		if !selected(sc.name) {
			continue
		}
		b.run(false, sc.served, -1-r, d/5)
		for _, i := range rotation(len(clientContenders), r) {
			c := clientContenders[i]
			s := b.run(c.intercepted, sc.served, r, d)
			rep.add(sc.name, c.name, s)
			fmt.Fprintf(os.Stderr, "round %d  %-34s %-26s %9.0f calls/s  %d errors\n",
				r+1, shorten(sc.name), c.name, s.ops, s.errors)
		}
	}
}
