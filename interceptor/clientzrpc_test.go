package interceptor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/breaker"
	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// zrpcClient is a zrpc client of addr with zrpc's default middlewares
// (tracing, duration, Prometheus, breaker, timeout), a Timeout of timeout,
// and the client interceptor of c added as a service adds it.
func zrpcClient(t *testing.T, addr string, timeout time.Duration, c interceptor.ClientConf) testpb.PaymentsClient {
	t.Helper()
	var cc zrpc.RpcClientConf
	if err := conf.FillDefault(&cc); err != nil {
		t.Fatal(err)
	}
	cc.Endpoints, cc.Timeout = []string{addr}, timeout.Milliseconds()
	zc := zrpc.MustNewClient(cc, zrpc.WithUnaryClientInterceptor(interceptor.MustUnaryClientInterceptor(c)))
	t.Cleanup(func() { _ = zc.Conn().Close() })
	return testpb.NewPaymentsClient(zc.Conn())
}

// TestClientThroughZrpc: added with zrpc.WithUnaryClientInterceptor, the
// interceptor runs inside zrpc's own and retries there, with one key.
func TestClientThroughZrpc(t *testing.T) {
	srv := newScripted(unavailable(), unavailable())
	client := zrpcClient(t, serveGRPC(t, srv), 10*time.Second, fastRetries())
	if _, err := client.Pay(context.Background(), order("Z-1")); err != nil {
		t.Fatalf("Pay through zrpc: %v, want the third attempt's success", err)
	}
	sameKey(t, srv.attempts(), 3)
}

// TestClientInsideZrpcTimeout: zrpc's Timeout is the deadline of the whole
// logical call, not of an attempt: attempts cut by AttemptTimeout are
// retried only while it leaves time, and the call ends DeadlineExceeded
// at it, far short of MaxAttempts.
func TestClientInsideZrpcTimeout(t *testing.T) {
	srv := newScripted()
	srv.hang = map[int]bool{0: true, 1: true, 2: true, 3: true, 4: true, 5: true, 6: true, 7: true, 8: true, 9: true}
	c := fastRetries()
	c.MaxAttempts, c.AttemptTimeout = 10, 200*time.Millisecond
	client := zrpcClient(t, serveGRPC(t, srv), 500*time.Millisecond, c)
	if _, err := client.Pay(context.Background(), order("Z-2")); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("Pay through zrpc: %v, want DeadlineExceeded at zrpc's Timeout", err)
	}
	// 500ms holds two attempts of 200ms and the start of a third, which
	// zrpc's deadline cuts and which is not retried.
	if n := len(srv.attempts()); n < 2 || n > 3 {
		t.Fatalf("%d attempts within zrpc's Timeout of 500ms with AttemptTimeout 200ms, want 2 or 3", n)
	}
}

// TestClientInsideZrpcBreaker: zrpc's breaker sees logical calls, not
// attempts: against a server that stays Unavailable it opens, and the calls
// it then drops make no attempt at all, while each call it lets through
// makes MaxAttempts. Retries multiply a failing server's load by
// MaxAttempts at most, and a breaker shedding calls sheds their retries.
func TestClientInsideZrpcBreaker(t *testing.T) {
	answers := make([]error, 1000)
	for i := range answers {
		answers[i] = unavailable()
	}
	srv := newScripted(answers...)
	// zrpc's breakers live as long as the process, one per target and
	// method: Refund, which no other test calls through zrpc, keeps this
	// one from refusing another test's calls to a port used again.
	c := fastRetries()
	c.Methods = []string{refundMethod}
	client := zrpcClient(t, serveGRPC(t, srv), 10*time.Second, c)

	const calls = 100
	var dropped, failed int
	for range calls {
		_, err := client.Refund(context.Background(), order("Z-3"))
		switch {
		case errors.Is(err, breaker.ErrServiceUnavailable):
			dropped++
		case status.Code(err) == codes.Unavailable:
			failed++
		default:
			t.Fatalf("Refund through zrpc: %v, want Unavailable or the breaker's refusal", err)
		}
	}
	if dropped == 0 {
		t.Fatalf("zrpc's breaker dropped none of %d failing calls", calls)
	}
	if n := len(srv.attempts()); n != failed*3 {
		t.Fatalf("%d attempts for %d calls let through, want MaxAttempts (3) each, and none for the %d dropped",
			n, failed, dropped)
	}
}
