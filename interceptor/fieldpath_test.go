package interceptor

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zerolock/zerolock/internal/testing/testpb"
)

func keyFor(t *testing.T, ru *rule, req *testpb.PayRequest) (string, error) {
	t.Helper()
	key, _, err := callKey(context.Background(), ru, req)
	return key, err
}

func mustRule(t testing.TB, keys ...string) *rule {
	t.Helper()
	ru, err := compileRule(withDefaults(LockConf{}), compileOnly(), LockRule{Method: "/zerolock.test.Payments/Pay", Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	return ru
}

// TestFieldPathsOfEveryKind: for each path, a request is keyed, an equal
// request gets the same key, and a request that differs only there gets
// another.
func TestFieldPathsOfEveryKind(t *testing.T) {
	base := func() *testpb.PayRequest {
		p := int32(3)
		return &testpb.PayRequest{
			Order: &testpb.Order{
				Id:       "O-1",
				Items:    []*testpb.Item{{Sku: "a", Quantity: 1}, {Sku: "b", Quantity: 2}},
				Channel:  testpb.Channel_CHANNEL_WEB,
				Tags:     map[string]string{"src": "ad"},
				Priority: &p,
				Labels:   []string{"x", "y"},
			},
			UserId: "u-1", Amount: 9.5, Gift: true, Nonce: []byte{1, 2}, Seq: 7, Ratio: 0.25,
			S32: -1, F64: 2, Sf32: -3, U32: 4, I32: 5, S64: -6, F32: 7, Sf64: -8,
			ByLine: map[int64]*testpb.Item{10: {Sku: "line"}},
		}
	}
	for _, tc := range []struct {
		path   string
		change func(*testpb.PayRequest)
	}{
		{"order.id", func(r *testpb.PayRequest) { r.Order.Id = "O-2" }},
		{"user_id", func(r *testpb.PayRequest) { r.UserId = "u-2" }},
		{"userId", func(r *testpb.PayRequest) { r.UserId = "u-2" }}, // JSON name
		{"order.items.1.sku", func(r *testpb.PayRequest) { r.Order.Items[1].Sku = "c" }},
		{"order.items.0.quantity", func(r *testpb.PayRequest) { r.Order.Items[0].Quantity = 9 }},
		{"order.items.1", func(r *testpb.PayRequest) { r.Order.Items[1].Quantity = 9 }}, // a whole message
		{"order.channel", func(r *testpb.PayRequest) { r.Order.Channel = testpb.Channel_CHANNEL_APP }},
		{"order.tags.src", func(r *testpb.PayRequest) { r.Order.Tags["src"] = "mail" }},
		{"order.priority", func(r *testpb.PayRequest) { *r.Order.Priority = 4 }},
		{"order.labels.1", func(r *testpb.PayRequest) { r.Order.Labels[1] = "z" }},
		{"by_line.10.sku", func(r *testpb.PayRequest) { r.ByLine[10].Sku = "other" }},
		{"amount", func(r *testpb.PayRequest) { r.Amount = 9.25 }},
		{"nonce", func(r *testpb.PayRequest) { r.Nonce = []byte{1, 3} }},
		{"seq", func(r *testpb.PayRequest) { r.Seq = 8 }},
		{"ratio", func(r *testpb.PayRequest) { r.Ratio = 0.5 }},
		{"s32", func(r *testpb.PayRequest) { r.S32 = -2 }},
		{"f64", func(r *testpb.PayRequest) { r.F64 = 3 }},
		{"sf32", func(r *testpb.PayRequest) { r.Sf32 = 3 }},
		{"u32", func(r *testpb.PayRequest) { r.U32 = 5 }},
		{"i32", func(r *testpb.PayRequest) { r.I32 = 6 }},
		{"s64", func(r *testpb.PayRequest) { r.S64 = 6 }},
		{"f32", func(r *testpb.PayRequest) { r.F32 = 8 }},
		{"sf64", func(r *testpb.PayRequest) { r.Sf64 = 8 }},
	} {
		t.Run(tc.path, func(t *testing.T) {
			ru := mustRule(t, "field:"+tc.path)
			k1, err := keyFor(t, ru, base())
			if err != nil {
				t.Fatal(err)
			}
			k2, _ := keyFor(t, ru, base())
			other := base()
			tc.change(other)
			k3, err := keyFor(t, ru, other)
			if err != nil {
				t.Fatal(err)
			}
			if k1 != k2 || k1 == k3 {
				t.Fatalf("same request keys equal: %v; changed request key differs: %v", k1 == k2, k1 != k3)
			}
		})
	}
}

func TestNumbersOfDifferentWidthsAgree(t *testing.T) {
	a, _ := keyFor(t, mustRule(t, "field:i32"), &testpb.PayRequest{I32: 7})
	b, _ := keyFor(t, mustRule(t, "field:seq"), &testpb.PayRequest{Seq: 7})
	if a != b {
		t.Fatal("int32 7 and uint64 7 are keyed differently")
	}
	c, _ := keyFor(t, mustRule(t, "field:amount"), &testpb.PayRequest{Amount: 7})
	if a != c {
		t.Fatal("int32 7 and double 7.0 are keyed differently")
	}
}

func TestMissingAndInvalidValues(t *testing.T) {
	for _, tc := range []struct {
		path string
		req  *testpb.PayRequest
	}{
		{"order.id", &testpb.PayRequest{}},
		{"order.items.5.sku", &testpb.PayRequest{Order: &testpb.Order{Items: []*testpb.Item{{Sku: "a"}}}}},
		{"order.tags.none", &testpb.PayRequest{Order: &testpb.Order{Tags: map[string]string{"src": "x"}}}},
		{"order.priority", &testpb.PayRequest{Order: &testpb.Order{}}},
		{"amount", &testpb.PayRequest{}}, // proto3 zero value: not set
		{"gift", &testpb.PayRequest{}},   // false is a bool's zero value: not set
	} {
		_, err := keyFor(t, mustRule(t, "field:"+tc.path), tc.req)
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s on %v: %v, want InvalidArgument", tc.path, tc.req, err)
		}
	}
	nan := &testpb.PayRequest{Amount: nanValue()}
	if _, err := keyFor(t, mustRule(t, "field:amount"), nan); status.Code(err) != codes.InvalidArgument {
		t.Errorf("NaN amount: %v, want InvalidArgument", err)
	}
}

func nanValue() float64 {
	zero := 0.0
	return zero / zero
}

// TestLazyCompile: a rule whose service is not registered at start-up
// (SkipMethodCheck, for a service registered at run time) is checked
// against the first request's descriptor; a wrong path then fails every
// call with Internal naming the rule.
func TestLazyCompile(t *testing.T) {
	good, err := compileRule(withDefaults(LockConf{}), compileOnly(), LockRule{Method: "/elsewhere.Svc/Pay", Keys: []string{"field:order.id"}, SkipMethodCheck: true})
	if err != nil {
		t.Fatalf("unregistered service rejected at start-up: %v", err)
	}
	if _, err := keyFor(t, good, &testpb.PayRequest{Order: &testpb.Order{Id: "x"}}); err != nil {
		t.Fatalf("lazily compiled path: %v", err)
	}
	bad, _ := compileRule(withDefaults(LockConf{}), compileOnly(), LockRule{Method: "/elsewhere.Svc/Pay", Keys: []string{"field:order.nope"}, SkipMethodCheck: true})
	for i := 0; i < 2; i++ {
		_, err := keyFor(t, bad, &testpb.PayRequest{})
		if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "order.nope") {
			t.Fatalf("call %d with a wrong lazy path: %v, want Internal naming it", i, err)
		}
	}
	if _, _, err := good.fieldsFor((&testpb.PayReply{}).ProtoReflect().Descriptor()); !errors.Is(err, ErrBadConfig) {
		t.Fatalf("a request of another type after compilation: %v, want ErrBadConfig", err)
	}
}

// FuzzFieldKey: arbitrary bytes decoded as a request never panic the key
// derivation, and any failure is InvalidArgument.
func FuzzFieldKey(f *testing.F) {
	seed, _ := proto.Marshal(&testpb.PayRequest{Order: &testpb.Order{Id: "O", Items: []*testpb.Item{{Sku: "s"}}}, UserId: "u"})
	f.Add(seed)
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})
	ru := mustRule(f, "field:order.items.0.sku", "field:order.tags.k", "field:by_line.3", "field:amount")
	f.Fuzz(func(t *testing.T, data []byte) {
		var req testpb.PayRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		_, err := keyFor(t, ru, &req)
		if err != nil && status.Code(err) != codes.InvalidArgument {
			t.Fatalf("key derivation failed with %v", err)
		}
	})
}
