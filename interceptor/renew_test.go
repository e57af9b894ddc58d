package interceptor_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// slowPayments holds each call for a second and reports its fence.
type slowPayments struct {
	testpb.UnimplementedPaymentsServer
	fences  chan int64
	entered chan struct{}
}

func (p *slowPayments) Pay(ctx context.Context, req *testpb.PayRequest) (*testpb.PayReply, error) {
	fence, _ := zerolock.FenceFromContext(ctx)
	p.fences <- fence
	p.entered <- struct{}{}
	select {
	case <-time.After(time.Second):
	case <-ctx.Done():
		return nil, status.FromContextError(context.Cause(ctx)).Err()
	}
	return &testpb.PayReply{Status: "paid"}, nil
}

func TestRenewAndFence(t *testing.T) {
	srv := redistest.Start(t)
	c := payConf(interceptor.ModeInflight, "field:order.id")
	c.Expire, c.Fence = 300*time.Millisecond, true // renewal is the default
	impl := &slowPayments{fences: make(chan int64, 10), entered: make(chan struct{}, 10)}
	client := serve(t, c, newStore(srv), impl)

	done := make(chan error, 1)
	go func() { _, err := client.Pay(context.Background(), order("R-1")); done <- err }()
	<-impl.entered
	time.Sleep(800 * time.Millisecond)
	if _, err := client.Pay(context.Background(), order("R-1")); status.Code(err) != codes.Aborted {
		t.Fatalf("duplicate late in a renewed call: %v, want Aborted", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { _, err := client.Pay(context.Background(), order("R-1")); done <- err }()
	<-impl.entered
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if a, b := <-impl.fences, <-impl.fences; a <= 0 || b <= a {
		t.Fatalf("fencing tokens %d then %d: want positive and increasing", a, b)
	}
	c = payConf(interceptor.ModeWindow, "peer")
	c.Renew = true // accepted for old configurations, now in window mode too
	if _, err := interceptor.UnaryServerInterceptor(c, newStore(srv)); err != nil {
		t.Fatalf("Renew with window mode: %v", err)
	}
}
