package interceptor_test

import (
	"context"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// scripted is a Payments server for the client interceptor's tests: it
// records the idempotency key of every attempt that reaches it and
// answers attempt i with answers[i] (success past the end), except that
// an attempt listed in hang waits for its context to end.
type scripted struct {
	testpb.UnimplementedPaymentsServer
	answers []error
	hang    map[int]bool

	mu   sync.Mutex
	keys []string // the idempotency-key of each attempt, "" for none
}

func newScripted(answers ...error) *scripted {
	return &scripted{answers: answers}
}

func (s *scripted) Pay(ctx context.Context, _ *testpb.PayRequest) (*testpb.PayReply, error) {
	return s.answer(ctx)
}

func (s *scripted) Refund(ctx context.Context, _ *testpb.PayRequest) (*testpb.PayReply, error) {
	return s.answer(ctx)
}

func (s *scripted) answer(ctx context.Context) (*testpb.PayReply, error) {
	key := ""
	if values := metadata.ValueFromIncomingContext(ctx, interceptor.IdempotencyKeyMetadata); len(values) == 1 {
		key = values[0]
	}
	s.mu.Lock()
	i := len(s.keys)
	s.keys = append(s.keys, key)
	s.mu.Unlock()
	if s.hang[i] {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if i < len(s.answers) && s.answers[i] != nil {
		return nil, s.answers[i]
	}
	return &testpb.PayReply{Status: "paid"}, nil
}

// attempts returns the key of every attempt so far.
func (s *scripted) attempts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// serveGRPC runs a gRPC server of impl on 127.0.0.1:0 until the test ends.
func serveGRPC(t testing.TB, impl testpb.PaymentsServer, interceptors ...grpc.UnaryServerInterceptor) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	testpb.RegisterPaymentsServer(s, impl)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return l.Addr().String()
}

// dialClient returns a Payments client of addr through the client
// interceptor of c, and then through inner, which sees each attempt.
func dialClient(t testing.TB, addr string, c interceptor.ClientConf, inner ...grpc.UnaryClientInterceptor) testpb.PaymentsClient {
	t.Helper()
	i, err := interceptor.UnaryClientInterceptor(c)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(append([]grpc.UnaryClientInterceptor{i}, inner...)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return testpb.NewPaymentsClient(conn)
}

// sameKey fails the test unless keys are n attempts of one non-empty key.
func sameKey(t *testing.T, keys []string, n int) {
	t.Helper()
	if len(keys) != n {
		t.Fatalf("%d attempts (%q), want %d", len(keys), keys, n)
	}
	for _, k := range keys {
		if k == "" || k != keys[0] {
			t.Fatalf("attempts carried keys %q, want one key on all", keys)
		}
	}
}
