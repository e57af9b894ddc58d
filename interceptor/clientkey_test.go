package interceptor_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

const refundMethod = "/zerolock.test.Payments/Refund"

// checkout is a front service whose Refund, guarded by the server
// interceptor, pays twice downstream through the client interceptor: a
// handler that pays for two items.
type checkout struct {
	testpb.UnimplementedPaymentsServer
	downstream testpb.PaymentsClient
}

func (c *checkout) Refund(ctx context.Context, req *testpb.PayRequest) (*testpb.PayReply, error) {
	for range 2 {
		if _, err := c.downstream.Pay(ctx, req); err != nil {
			return nil, err
		}
	}
	return &testpb.PayReply{Status: "refunded"}, nil
}

// TestClientKeyFromServedRequest: the calls a handler guarded by a replay
// rule makes get keys derived from the request it serves: two calls to
// one method get two keys, the same request retried after its first run
// failed (its answer, Internal, was not kept) makes the same two again,
// so the service it calls can answer the first call with the result it
// kept, and another request makes two others.
func TestClientKeyFromServedRequest(t *testing.T) {
	srv := redistest.Start(t)
	// The first run's second call fails with a code the client interceptor
	// does not retry; every call after that succeeds.
	back := newScripted(nil, status.Error(codes.Internal, "provider error"))
	front := &checkout{downstream: dialClient(t, serveGRPC(t, back), fastRetries())}
	lock := interceptor.LockConf{Mode: interceptor.ModeReplay, SharedKeys: true, Rules: []interceptor.LockRule{{
		Method: refundMethod, Keys: []string{"field:order.id", "metadata:x-user-id"}}}}
	client := serve(t, lock, newStore(srv), front)

	refund := func(id string, wantErr bool) []string {
		t.Helper()
		before := len(back.attempts())
		if _, err := client.Refund(withUser("alice"), order(id)); (err != nil) != wantErr {
			t.Fatalf("Refund %s: %v, want an error %v", id, err, wantErr)
		}
		return back.attempts()[before:]
	}
	first := refund("K-1", true)
	if len(first) != 2 || first[0] == "" || first[1] == "" || first[0] == first[1] {
		t.Fatalf("two calls of one request carried keys %q, want two different keys", first)
	}
	for _, k := range first {
		if len(k) != 43 {
			t.Errorf("derived key %q is %d characters, want 43 (SHA-256, base64url)", k, len(k))
		}
	}
	if again := refund("K-1", false); len(again) != 2 || again[0] != first[0] || again[1] != first[1] {
		t.Fatalf("the same request retried made keys %q, want %q", again, first)
	}
	if other := refund("K-2", false); len(other) != 2 || other[0] == first[0] || other[1] == first[1] || other[0] == first[1] {
		t.Fatalf("another request made keys %q, like the first's %q", other, first)
	}
}

// TestClientKeyRandomOutsideRequest: outside a guarded request (a cron
// job, a consumer) each logical call gets a fresh random key, never one
// per client or connection, and keeps it across its retries.
func TestClientKeyRandomOutsideRequest(t *testing.T) {
	srv := newScripted(unavailable(), nil, unavailable())
	client := dialClient(t, serveGRPC(t, srv), fastRetries())
	for range 2 {
		if _, err := client.Pay(context.Background(), order("K-3")); err != nil {
			t.Fatal(err)
		}
	}
	keys := srv.attempts()
	if len(keys) != 4 || keys[0] == "" || keys[0] != keys[1] || keys[2] != keys[3] || keys[0] == keys[2] {
		t.Fatalf("two calls of one attempt and one retry each carried keys %q, want one key per call", keys)
	}
}

// TestClientKeyCallersOwn: a key the caller put in the outgoing metadata
// is used as it is, on every attempt.
func TestClientKeyCallersOwn(t *testing.T) {
	srv := newScripted(unavailable())
	client := dialClient(t, serveGRPC(t, srv), fastRetries())
	ctx := metadata.AppendToOutgoingContext(context.Background(), interceptor.IdempotencyKeyMetadata, "order-42")
	if _, err := client.Pay(ctx, order("K-4")); err != nil {
		t.Fatal(err)
	}
	keys := srv.attempts()
	sameKey(t, keys, 2)
	if keys[0] != "order-42" {
		t.Fatalf("the attempts carried %q, want the caller's order-42", keys[0])
	}
}

// TestClientKeyOutsideReplay: under inflight, window and limit rules a
// later request with the same lock key is new work (a second "add to
// cart"), not a retry, so each request's calls get keys of their own:
// keyed on the lock key alone, the second request's calls would be
// answered downstream with the first's stored results.
func TestClientKeyOutsideReplay(t *testing.T) {
	for _, lock := range []interceptor.LockConf{
		{Mode: interceptor.ModeInflight},
		{Mode: interceptor.ModeWindow, Expire: 100 * time.Millisecond},
		{Mode: interceptor.ModeLimit, Permits: 2},
	} {
		t.Run(lock.Mode, func(t *testing.T) {
			srv := redistest.Start(t)
			back := newScripted()
			front := &checkout{downstream: dialClient(t, serveGRPC(t, back), fastRetries())}
			lock.Rules = []interceptor.LockRule{{Method: refundMethod, Keys: []string{"field:order.id", "metadata:x-user-id"}}}
			client := serve(t, lock, newStore(srv), front)
			for range 2 {
				// A window refuses the second request (Aborted, before any
				// call) until its Expire passes.
				deadline := time.Now().Add(10 * time.Second)
				_, err := client.Refund(withUser("alice"), order("K-5"))
				for status.Code(err) == codes.Aborted && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
					_, err = client.Refund(withUser("alice"), order("K-5"))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			keys := back.attempts()
			seen := make(map[string]bool)
			for _, k := range keys {
				seen[k] = true
			}
			if len(keys) != 4 || len(seen) != 4 {
				t.Fatalf("two requests of one lock key, two calls each, carried keys %q: want four different", keys)
			}
		})
	}
}
