package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/example/rpc/internal/config"
	"github.com/zerolock/zerolock/example/rpc/payments"
	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// TestMain fails the run if a test leaves a goroutine behind, such as the
// embedded miniredis's clock (go-zero's process-wide goroutines aside: see
// redistest.LeakOptions).
func TestMain(m *testing.M) {
	redistest.Quiet()
	redistest.Main(m)
}

// start runs the service from etc/rpc.yaml, as main does, on a free port.
func start(t *testing.T, hold time.Duration) payments.PaymentsClient {
	t.Helper()
	var c config.Config
	conf.MustLoad(filepath.Join("..", "..", "etc", "rpc.yaml"), &c, conf.UseEnv())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c.ListenOn = l.Addr().String()
	l.Close()
	c.PayHold = hold
	s, sc := newServer(c)
	go s.Start()
	redistest.WaitListening(t, c.ListenOn)
	t.Cleanup(func() {
		s.Stop()
		sc.Close()
	})
	conn := zrpc.MustNewClient(zrpc.RpcClientConf{Endpoints: []string{c.ListenOn}, NonBlock: true, Timeout: 10000})
	t.Cleanup(func() { _ = conn.Conn().Close() }) // before the server stops
	return payments.NewPaymentsClient(conn.Conn())
}

// pay pays order as user, with the idempotency key pay-<order>, as the
// client program does.
func pay(client payments.PaymentsClient, user, order string) (*payments.PayResp, error) {
	ctx := metadata.AppendToOutgoingContext(context.Background(), interceptor.IdempotencyKeyMetadata, "pay-"+order)
	if user != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+user)
	}
	return client.Pay(ctx, &payments.PayReq{Order: &payments.Order{Id: order, Amount: 1}})
}

// payTwice sends one payment twice at once, as the client program does.
func payTwice(t *testing.T, client payments.PaymentsClient, user, order string) (paid int, aborted int) {
	t.Helper()
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := pay(client, user, order)
			mu.Lock()
			defer mu.Unlock()
			switch status.Code(err) {
			case codes.OK:
				paid++
			case codes.Aborted:
				aborted++
			default:
				t.Errorf("payment: %v", err)
			}
		}()
	}
	wg.Wait()
	return paid, aborted
}

func checkService(t *testing.T, client payments.PaymentsClient) {
	t.Helper()
	if paid, aborted := payTwice(t, client, "alice", "o-1"); paid != 1 || aborted != 1 {
		t.Fatalf("the same payment twice at once: %d paid, %d aborted; want 1 and 1", paid, aborted)
	}
	if paid, _ := payTwice(t, client, "bob", "o-2"); paid != 1 {
		t.Fatalf("bob's payment: %d paid, want 1", paid)
	}
	// The rule is in replay mode: a retry after the payment completed gets
	// its answer, and the payment does not run again.
	var header metadata.MD
	resp, err := client.Pay(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer alice",
		interceptor.IdempotencyKeyMetadata, "pay-o-1"),
		&payments.PayReq{Order: &payments.Order{Id: "o-1", Amount: 1}}, grpc.Header(&header))
	if err != nil || resp.GetTimes() != 1 || strings.Join(header.Get("idempotent-replayed"), ",") != "true" {
		t.Fatalf("alice's later retry: %v, %v, header %v; want the first payment replayed (times 1)", resp, err, header)
	}
	if _, err := pay(client, "", "o-3"); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("no authorization: %v, want Unauthenticated", err)
	}
	if _, err := pay(client, "alice", ""); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no order id: %v, want InvalidArgument", err)
	}
	// The key identifies the payment: without one the call is refused, and
	// alice's key of o-1 reused for another order is a mistake.
	if _, err := client.Pay(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer alice"),
		&payments.PayReq{Order: &payments.Order{Id: "o-4", Amount: 1}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no idempotency key: %v, want InvalidArgument", err)
	}
	if _, err := client.Pay(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer alice",
		interceptor.IdempotencyKeyMetadata, "pay-o-1"),
		&payments.PayReq{Order: &payments.Order{Id: "o-5", Amount: 1}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("a key reused for another order: %v, want InvalidArgument", err)
	}
}

func TestEmbeddedMiniredis(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	checkService(t, start(t, time.Second)) // long enough for the twin call to arrive while held
}

func TestRealRedis(t *testing.T) {
	srv := redistest.Start(t)
	t.Setenv("ZEROLOCK_REDIS_HOST", srv.Addr())
	checkService(t, start(t, time.Second)) // long enough for the twin call to arrive while held
	if keys := srv.Client(t).Keys(context.Background(), "demo:payments:*").Val(); len(keys) != 2 {
		t.Fatalf("payments in the configured Redis: %v, want alice's and bob's", keys)
	}
}
