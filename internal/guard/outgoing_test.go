package guard

import (
	"context"
	"testing"
)

// Outgoing keys: derived from the served request (the same request
// retried makes the same keys, two calls two keys, another call or
// request others), random without one.
func TestOutgoingKey(t *testing.T) {
	served := func() context.Context {
		return withRequest(context.Background(), "zerolock:http:POST:/checkout:abc", false)
	}
	first, retried := served(), served()
	a1, a2 := OutgoingKey(first, "/pay.P/Pay"), OutgoingKey(first, "/pay.P/Pay")
	b1, b2 := OutgoingKey(retried, "/pay.P/Pay"), OutgoingKey(retried, "/pay.P/Pay")
	if a1 != b1 || a2 != b2 {
		t.Fatalf("a retried request made keys %q %q, want the first's %q %q", b1, b2, a1, a2)
	}
	if a1 == a2 {
		t.Fatal("two calls of one method in one request got one key")
	}
	if other := OutgoingKey(served(), "/pay.P/Refund"); other == a1 {
		t.Fatal("another method got the same key")
	}
	if other := OutgoingKey(withRequest(context.Background(), "another", false), "/pay.P/Pay"); other == a1 {
		t.Fatal("another request got the same key")
	}
	if r1, r2 := OutgoingKey(context.Background(), "/pay.P/Pay"), OutgoingKey(context.Background(), "/pay.P/Pay"); r1 == r2 || len(r1) < 20 {
		t.Fatalf("keys without a served request %q %q: want random and distinct", r1, r2)
	}
}
