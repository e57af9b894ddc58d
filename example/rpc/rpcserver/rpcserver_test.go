package rpcserver_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/example/rpc/payments"
	"github.com/zerolock/zerolock/example/rpc/rpcserver"
	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// TestMain fails the run if a test leaves a goroutine behind, such as the
// in-process server's or the embedded miniredis's.
func TestMain(m *testing.M) {
	redistest.Quiet()
	redistest.Main(m)
}

var rpcYAML = filepath.Join("..", "..", "..", "etc", "rpc.yaml")

// startInProcess starts the service as example/api does, from
// etc/rpc.yaml on an embedded miniredis, and dials it with opts.
func startInProcess(t *testing.T, opts ...grpc.DialOption) payments.PaymentsClient {
	t.Helper()
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	p, err := rpcserver.StartInProcess(rpcYAML)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	conn, err := grpc.NewClient(p.Addr(), append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() }) // before the server stops
	return payments.NewPaymentsClient(conn)
}

// lostPay is a Pay of order by alice that asks the service to lose its
// answer, with the idempotency key key unless it is empty.
func lostPay(client payments.PaymentsClient, key, order string, opts ...grpc.CallOption) (*payments.PayResp, error) {
	ctx := metadata.AppendToOutgoingContext(context.Background(),
		"authorization", "Bearer alice", rpcserver.LoseAnswerMetadata, "1")
	if key != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, interceptor.IdempotencyKeyMetadata, key)
	}
	return client.Pay(ctx, &payments.PayReq{Order: &payments.Order{Id: order, Amount: 1}}, opts...)
}

// The switch loses the first answer to a key, after the payment ran and
// its result was stored: the next call with the key gets it replayed.
func TestLoseAnswerOncePerKey(t *testing.T) {
	client := startInProcess(t)
	if _, err := lostPay(client, "k-1", "o-1"); status.Code(err) != codes.Unavailable {
		t.Fatalf("the first call: %v, want Unavailable (its answer lost)", err)
	}
	var header metadata.MD
	resp, err := lostPay(client, "k-1", "o-1", grpc.Header(&header))
	if err != nil || resp.GetTimes() != 1 || strings.Join(header.Get("idempotent-replayed"), ",") != "true" {
		t.Fatalf("the retry: %v, %v, header %v; want the payment replayed (times 1)", resp, err, header)
	}
	// etc/rpc.yaml's rule keys payments on the idempotency key: a call
	// without one is refused before it runs, and nothing is lost.
	if _, err := lostPay(client, "", "o-2"); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a call without a key: %v; want InvalidArgument", err)
	}
}

// Through the client interceptor the lost answer is retried with the same
// key and the caller sees one payment.
func TestClientInterceptorRetriesALostAnswer(t *testing.T) {
	client := startInProcess(t, grpc.WithUnaryInterceptor(interceptor.MustUnaryClientInterceptor(
		interceptor.ClientConf{Methods: []string{payments.Payments_Pay_FullMethodName}})))
	var header metadata.MD
	resp, err := lostPay(client, "", "o-1", grpc.Header(&header))
	if err != nil || resp.GetTimes() != 1 || strings.Join(header.Get("idempotent-replayed"), ",") != "true" {
		t.Fatalf("a call whose answer was lost: %v, %v, header %v; want the payment replayed to the retry (times 1)", resp, err, header)
	}
}

func TestStartInProcessReportsABadConfig(t *testing.T) {
	if _, err := rpcserver.StartInProcess(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Fatal("a missing config file: no error")
	}
}
