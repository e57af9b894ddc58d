package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/zerolock/zerolock/example/rpc/payments"
	"github.com/zerolock/zerolock/example/rpc/rpcserver"
	"github.com/zerolock/zerolock/interceptor"
)

// checkoutAnswer is the answer to POST /checkout.
type checkoutAnswer struct {
	status   int
	replayed string // the Idempotent-Replayed header
	raw      string // the body as sent
	body     struct {
		OrderId     string
		Amount      int64
		Times       int64
		PayReplayed bool
		Code        string
	}
}

// checkout sends POST /checkout with token and the Idempotency-Key key;
// lose sets the demo switch that makes the payments service lose its
// first answer to the Pay call.
func checkout(t *testing.T, base, token, key, orderID string, lose bool) checkoutAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/checkout",
		strings.NewReader(`{"orderId":"`+orderID+`","amount":300}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Idempotency-Key", key)
	if lose {
		req.Header.Set("X-Demo-Lose-Answer", "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := checkoutAnswer{status: resp.StatusCode, replayed: resp.Header.Get("Idempotent-Replayed"), raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		t.Fatalf("checkout answered %d with a body that is not JSON: %q", resp.StatusCode, raw)
	}
	return a
}

// TestCheckoutLostAnswerPaysOnce runs the service as go run ./example/api
// does (etc/api.yaml: no payments endpoint, so the payments service runs
// in-process as etc/rpc.yaml configures it, on an embedded miniredis). A
// checkout whose Pay answer the payments service loses is retried by the
// client interceptor with the same idempotency key and gets the payment
// replayed: Pay ran once (times 1). A retried checkout (the same
// Idempotency-Key) gets the first checkout's answer replayed by the
// middleware, and pays nothing more.
func TestCheckoutLostAnswerPaysOnce(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	base, _ := startServer(t, loadConfig(t))
	token := login(t, base, "erin")

	first := checkout(t, base, token, "c-1", "o-1", true)
	if first.status != http.StatusOK || first.body.OrderId != "o-1" || first.body.Times != 1 ||
		!first.body.PayReplayed || first.replayed != "" {
		t.Fatalf("a checkout whose payment answer was lost: %d %s replayed=%q; "+
			"want 200, the payment run once and replayed to the interceptor's retry", first.status, first.raw, first.replayed)
	}

	retry := checkout(t, base, token, "c-1", "o-1", false)
	if retry.status != http.StatusOK || retry.raw != first.raw || retry.replayed != "true" {
		t.Fatalf("the retried checkout: %d %s replayed=%q; want the first checkout's answer %s replayed",
			retry.status, retry.raw, retry.replayed, first.raw)
	}

	// Nothing lost: the payment's own answer, not a replay.
	other := checkout(t, base, token, "c-2", "o-2", false)
	if other.status != http.StatusOK || other.body.Times != 1 || other.body.PayReplayed {
		t.Fatalf("a checkout of another order: %d %s; want 200, paid once, not replayed", other.status, other.raw)
	}

	// Another checkout key is another checkout, even of a paid order: its
	// payment's key is derived from it, so the payment runs again (times
	// 2), and is not the first one replayed. (The payments service keys on
	// the idempotency key: the derivation, not the order, decides.)
	again := checkout(t, base, token, "c-3", "o-1", false)
	if again.status != http.StatusOK || again.body.Times != 2 || again.body.PayReplayed || again.replayed != "" {
		t.Fatalf("a new checkout of a paid order: %d %s replayed=%q; want a payment of its own, the order's second",
			again.status, again.raw, again.replayed)
	}

	// Another user's order of the same id is paid on its own.
	if frank := checkout(t, base, login(t, base, "frank"), "c-1", "o-1", true); frank.status != http.StatusOK ||
		frank.body.Times != 1 || !frank.body.PayReplayed {
		t.Fatalf("frank's checkout: %d %s; want his own payment, run once", frank.status, frank.raw)
	}
}

// TestCheckoutWithoutAKeyIsRefused: the checkout's replay rule needs the
// Idempotency-Key; without it nothing is paid.
func TestCheckoutWithoutAKeyIsRefused(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	base, _ := startServer(t, loadConfig(t))
	token := login(t, base, "grace")
	if a := checkout(t, base, token, "", "o-1", false); a.status != http.StatusBadRequest {
		t.Fatalf("a checkout without an Idempotency-Key: %d %s; want 400", a.status, a.raw)
	}
}

// TestCheckoutCallsTheConfiguredPayments: with an endpoint in PaymentsRpc
// the service pays through the payments service there and starts none of
// its own.
func TestCheckoutCallsTheConfiguredPayments(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	elsewhere, err := rpcserver.StartInProcess(filepath.Join("..", "..", "etc", "rpc.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(elsewhere.Close)
	c := loadConfig(t)
	c.PaymentsRpc.Endpoints = []string{elsewhere.Addr()}
	c.InProcessPayments = filepath.Join(t.TempDir(), "missing.yaml") // read only to start one
	base, _ := startServer(t, c)
	if a := checkout(t, base, login(t, base, "heidi"), "c-1", "o-1", false); a.status != http.StatusOK || a.body.Times != 1 {
		t.Fatalf("checkout: %d %s; want 200, paid once", a.status, a.raw)
	}

	// The payment is the one elsewhere: paying the order there again, as
	// another payment (a key of its own), makes its second.
	conn, err := grpc.NewClient(elsewhere.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var header metadata.MD
	resp, err := payments.NewPaymentsClient(conn).Pay(
		metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer heidi",
			interceptor.IdempotencyKeyMetadata, "another"),
		&payments.PayReq{Order: &payments.Order{Id: "o-1", Amount: 300}}, grpc.Header(&header))
	if err != nil || resp.GetTimes() != 2 || len(header.Get("idempotent-replayed")) != 0 {
		t.Fatalf("heidi's order paid again at %s: %v, %v, header %v; want its second payment (the checkout's the first)", elsewhere.Addr(), resp, err, header)
	}
}
