package guard

import (
	"context"
	"strings"
	"testing"
)

// The handler's context carries the request's key, made unique per
// request outside replay mode, and counts calls per method.
func TestRequestFrom(t *testing.T) {
	if _, ok := RequestFrom(context.Background()); ok {
		t.Fatal("a Request in a context that serves none")
	}
	r, ok := RequestFrom(withRequest(context.Background(), "k", false))
	if !ok || r.Key != "k" {
		t.Fatalf("RequestFrom = %+v, %v; want key k", r, ok)
	}
	if a, b, c := r.Next("/p.S/A"), r.Next("/p.S/A"), r.Next("/p.S/B"); a != 1 || b != 2 || c != 1 {
		t.Fatalf("ordinals %d %d %d, want 1 2 1", a, b, c)
	}
	one, _ := RequestFrom(withRequest(context.Background(), "k", true))
	two, _ := RequestFrom(withRequest(context.Background(), "k", true))
	if one.Key == two.Key || !strings.HasPrefix(one.Key, "k#") {
		t.Fatalf("keys %q and %q outside replay mode: want two of their own, from k", one.Key, two.Key)
	}
}
