package interceptor

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/zerolock/zerolock/internal/keyspec"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// canonicalKey is the key of a whole message in its canonical encoding.
func canonicalKey(m proto.Message) string {
	hs := keyspec.NewHasher()
	addCanonical(hs, m.ProtoReflect())
	return hs.Key("test")
}

// withUnknown returns a copy of m decoded from its bytes followed by an
// unknown field, as a newer client's request would arrive.
func withUnknown[M proto.Message](t *testing.T, m M) M {
	t.Helper()
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	b = protowire.AppendTag(b, 1000, protowire.BytesType)
	b = protowire.AppendString(b, "junk the handler never sees")
	b = protowire.AppendTag(b, 1001, protowire.VarintType)
	b = protowire.AppendVarint(b, 42)
	out := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	if len(out.ProtoReflect().GetUnknown()) == 0 {
		t.Fatal("the unknown field was not kept")
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// TestCanonicalIgnoresUnknownFields: a request that carries fields the
// service's proto does not declare, at the top of the keyed message or in
// a message nested in it, gets the same key as the request without them,
// so such a duplicate is still caught; the request is left as it came.
func TestCanonicalIgnoresUnknownFields(t *testing.T) {
	clean := func() *testpb.Order {
		return &testpb.Order{Id: "O-1", Items: []*testpb.Item{{Sku: "a", Quantity: 1}}, Tags: map[string]string{"k": "v"}}
	}
	nestedJunk := clean()
	nestedJunk.Items[0] = withUnknown(t, nestedJunk.Items[0])
	for name, order := range map[string]*testpb.Order{
		"in the keyed message": withUnknown(t, clean()),
		"in a nested message":  withUnknown(t, &testpb.Order{Id: "O-1", Items: []*testpb.Item{withUnknown(t, &testpb.Item{Sku: "a", Quantity: 1})}, Tags: map[string]string{"k": "v"}}),
		"at both levels":       withUnknown(t, nestedJunk),
	} {
		t.Run(name, func(t *testing.T) {
			ru := mustRule(t, "field:order")
			want, err := keyFor(t, ru, &testpb.PayRequest{Order: clean()})
			if err != nil {
				t.Fatal(err)
			}
			req := &testpb.PayRequest{Order: order}
			before := proto.Clone(req)
			got, err := keyFor(t, ru, req)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatal("key field:order changes with an unknown field the handler never sees")
			}
			if !proto.Equal(req, before) || len(req.Order.ProtoReflect().GetUnknown())+len(req.Order.Items[0].ProtoReflect().GetUnknown()) == 0 {
				t.Fatal("hashing modified the request")
			}
		})
	}
	t.Run("whole request", func(t *testing.T) {
		req := withUnknown(t, &testpb.PayRequest{Order: withUnknown(t, clean()), UserId: "u"})
		if canonicalKey(req) != canonicalKey(&testpb.PayRequest{Order: clean(), UserId: "u"}) {
			t.Fatal("the canonical form of a whole request changes with unknown fields")
		}
	})
}

// TestCanonicalDefaultsEqualUnset: a field with explicit presence set to
// its default, and a message field set to an empty message, are what the
// handler's getters return for an unset field, so they hash as unset.
func TestCanonicalDefaultsEqualUnset(t *testing.T) {
	ru := mustRule(t, "field:order")
	same := func(t *testing.T, a, b *testpb.PayRequest) {
		t.Helper()
		if canonicalKey(a) != canonicalKey(b) {
			t.Errorf("whole requests %v and %v hash differently", a, b)
		}
		ka, errA := keyFor(t, ru, a)
		kb, errB := keyFor(t, ru, b)
		if ka != kb || status.Code(errA) != status.Code(errB) {
			t.Errorf("field:order of %v and %v: %q (%v) and %q (%v)", a, b, ka, errA, kb, errB)
		}
	}
	t.Run("optional set to its default", func(t *testing.T) {
		same(t, &testpb.PayRequest{Order: &testpb.Order{Id: "O", Priority: ptr(int32(0))}},
			&testpb.PayRequest{Order: &testpb.Order{Id: "O"}})
	})
	t.Run("empty nested message", func(t *testing.T) {
		same(t, &testpb.PayRequest{UserId: "u", Order: &testpb.Order{}}, &testpb.PayRequest{UserId: "u"})
		same(t, &testpb.PayRequest{UserId: "u", Order: &testpb.Order{Priority: ptr(int32(0))}}, &testpb.PayRequest{UserId: "u"})
	})
	t.Run("an empty key message is missing", func(t *testing.T) {
		for _, req := range []*testpb.PayRequest{
			{Order: &testpb.Order{}},
			{Order: &testpb.Order{Priority: ptr(int32(0)), Tags: map[string]string{}}},
		} {
			if _, err := keyFor(t, ru, req); status.Code(err) != codes.InvalidArgument {
				t.Errorf("field:order of %v: %v, want InvalidArgument as for no order", req, err)
			}
		}
		if _, err := keyFor(t, mustRule(t, "field:by_line.3"), &testpb.PayRequest{ByLine: map[int64]*testpb.Item{3: {}}}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("field:by_line.3 of an empty item: %v, want InvalidArgument", err)
		}
	})
	t.Run("but not values that differ", func(t *testing.T) {
		for _, tc := range []struct{ a, b *testpb.PayRequest }{
			{&testpb.PayRequest{Order: &testpb.Order{Id: "O", Priority: ptr(int32(1))}}, &testpb.PayRequest{Order: &testpb.Order{Id: "O"}}},
			{&testpb.PayRequest{Order: &testpb.Order{Id: "O", Items: []*testpb.Item{{}}}}, &testpb.PayRequest{Order: &testpb.Order{Id: "O"}}},
			{&testpb.PayRequest{ByLine: map[int64]*testpb.Item{3: {}}}, &testpb.PayRequest{}},
		} {
			if canonicalKey(tc.a) == canonicalKey(tc.b) {
				t.Errorf("%v and %v hash alike", tc.a, tc.b)
			}
		}
	})
}

// TestCanonicalMapOrder: map entries that arrive in another order, or a
// key sent twice (the last one wins, as the handler sees it), hash alike.
func TestCanonicalMapOrder(t *testing.T) {
	entry := func(b []byte, key int64, sku string) []byte {
		item := protowire.AppendTag(nil, 1, protowire.BytesType)
		item = protowire.AppendString(item, sku)
		e := protowire.AppendTag(nil, 1, protowire.VarintType)
		e = protowire.AppendVarint(e, uint64(key))
		e = protowire.AppendTag(e, 2, protowire.BytesType)
		e = protowire.AppendBytes(e, item)
		b = protowire.AppendTag(b, 16, protowire.BytesType)
		return protowire.AppendBytes(b, e)
	}
	decode := func(b []byte) *testpb.PayRequest {
		var req testpb.PayRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			t.Fatal(err)
		}
		return &req
	}
	var inOrder, reversed, repeated []byte
	for i := int64(1); i <= 20; i++ {
		inOrder = entry(inOrder, i, strconv.FormatInt(i, 10))
		reversed = entry(reversed, 21-i, strconv.FormatInt(21-i, 10))
		repeated = entry(repeated, i, "stale")
	}
	for i := int64(20); i >= 1; i-- {
		repeated = entry(repeated, i, strconv.FormatInt(i, 10))
	}
	want := canonicalKey(decode(inOrder))
	if canonicalKey(decode(reversed)) != want || canonicalKey(decode(repeated)) != want {
		t.Fatal("map entries hash by their order on the wire")
	}

	tags := map[string]string{}
	ru := mustRule(t, "field:order")
	var first string
	for i := 0; i < 20; i++ {
		tags[strconv.Itoa(i)] = "v"
		k, err := keyFor(t, ru, &testpb.PayRequest{Order: &testpb.Order{Id: "O", Tags: tags}})
		if err != nil {
			t.Fatal(err)
		}
		if i == 19 {
			first = k
		}
	}
	for i := 0; i < 10; i++ { // Go's map iteration order differs from run to run
		if k, _ := keyFor(t, ru, &testpb.PayRequest{Order: &testpb.Order{Id: "O", Tags: tags}}); k != first {
			t.Fatal("the key of a map field changes between calls")
		}
	}
}

// TestCanonicalDistinguishes: requests that differ in any value, or in the
// shape that holds the same values, get different keys.
func TestCanonicalDistinguishes(t *testing.T) {
	reqs := []*testpb.PayRequest{
		{},
		{UserId: "a"},
		{UserId: "b"},
		{UserId: "ab"},
		{Nonce: []byte("a")},
		{Order: &testpb.Order{Id: "a"}},
		{Order: &testpb.Order{Id: "a"}, UserId: "b"},
		{Order: &testpb.Order{Id: "ab"}},
		{Order: &testpb.Order{Labels: []string{"ab"}}},
		{Order: &testpb.Order{Labels: []string{"a", "b"}}},
		{Order: &testpb.Order{Labels: []string{"b", "a"}}},
		{Order: &testpb.Order{Labels: []string{"a", "b", ""}}},
		{Order: &testpb.Order{Items: []*testpb.Item{{}}}},
		{Order: &testpb.Order{Items: []*testpb.Item{{}, {}}}},
		{Order: &testpb.Order{Items: []*testpb.Item{{Sku: "a"}, {Sku: "b"}}}},
		{Order: &testpb.Order{Items: []*testpb.Item{{Sku: "b"}, {Sku: "a"}}}},
		{Order: &testpb.Order{Items: []*testpb.Item{{Sku: "a", Quantity: 1}}}},
		{Order: &testpb.Order{Items: []*testpb.Item{{Sku: "a"}, {Quantity: 1}}}},
		{Order: &testpb.Order{Items: []*testpb.Item{{Sku: "a"}}, Labels: []string{"b"}}},
		{Order: &testpb.Order{Items: []*testpb.Item{{Sku: "a"}}}, UserId: "b"},
		{Order: &testpb.Order{Tags: map[string]string{"a": "b"}}},
		{Order: &testpb.Order{Tags: map[string]string{"ab": ""}}},
		{Order: &testpb.Order{Tags: map[string]string{"a": "", "b": ""}}},
		{Order: &testpb.Order{Tags: map[string]string{"b": "a"}}},
		{Order: &testpb.Order{Priority: ptr(int32(1))}},
		{Order: &testpb.Order{Priority: ptr(int32(-1))}},
		{Order: &testpb.Order{Channel: testpb.Channel_CHANNEL_WEB}},
		{I32: 1},
		{Seq: 1},
		{Amount: 1},
		{Amount: 1.5},
		{Amount: 0.1},
		{Amount: 0.10000000000000002},
		{Amount: math.MaxFloat64},
		{Amount: math.NaN()},
		{Amount: math.Inf(1)},
		{Amount: math.Inf(-1)},
		{Gift: true},
		{ByLine: map[int64]*testpb.Item{1: {}}},
		{ByLine: map[int64]*testpb.Item{2: {}}},
		{ByLine: map[int64]*testpb.Item{1: {Sku: "a"}}},
		{ByLine: map[int64]*testpb.Item{1: {}, 2: {}}},
	}
	seen := map[string]int{}
	for i, req := range reqs {
		k := canonicalKey(req)
		if j, dup := seen[k]; dup {
			t.Errorf("%v and %v hash alike", reqs[j], req)
		}
		seen[k] = i
	}
	ru := mustRule(t, "field:order")
	a, _ := keyFor(t, ru, &testpb.PayRequest{Order: &testpb.Order{Id: "O", Labels: []string{"ab"}}})
	b, _ := keyFor(t, ru, &testpb.PayRequest{Order: &testpb.Order{Id: "O", Labels: []string{"a", "b"}}})
	if a == b {
		t.Error(`field:order with labels ["ab"] and ["a","b"] have one key`)
	}
}

// TestCanonicalNonFinite: NaN (whatever its bits), +Inf and -Inf each hash
// as one token, so a request carrying them still has a canonical form.
func TestCanonicalNonFinite(t *testing.T) {
	nan1, nan2 := math.NaN(), math.Float64frombits(0xfff8_0000_0000_0001)
	if !math.IsNaN(nan2) {
		t.Fatal("not a NaN")
	}
	if canonicalKey(&testpb.PayRequest{Amount: nan1}) != canonicalKey(&testpb.PayRequest{Amount: nan2}) {
		t.Error("two NaNs hash differently")
	}
	if canonicalKey(&testpb.PayRequest{Ratio: float32(math.Inf(1))}) != canonicalKey(&testpb.PayRequest{Ratio: float32(math.Inf(1))}) {
		t.Error("+Inf is not deterministic")
	}
}

// TestDoubleKeys holds what the package doc says of doubles: JSON texts a
// gateway transcodes into one float64 are one key, distinct float64s two,
// and a float is widened before it is hashed.
func TestDoubleKeys(t *testing.T) {
	fromJSON := func(text string) *testpb.PayRequest {
		var req testpb.PayRequest
		if err := protojson.Unmarshal([]byte(text), &req); err != nil {
			t.Fatal(err)
		}
		return &req
	}
	amount := mustRule(t, "field:amount")
	key := func(ru *rule, req *testpb.PayRequest) string {
		k, err := keyFor(t, ru, req)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	a := fromJSON(`{"order":{"id":"O"},"amount":0.1}`)
	b := fromJSON(`{"order":{"id":"O"},"amount":0.10000000000000001}`)
	c := fromJSON(`{"order":{"id":"O"},"amount":0.10000000000000002}`)
	if key(amount, a) != key(amount, b) || canonicalKey(a) != canonicalKey(b) {
		t.Error("0.1 and 0.10000000000000001, one float64, are two keys")
	}
	if key(amount, a) == key(amount, c) || canonicalKey(a) == canonicalKey(c) {
		t.Error("0.1 and 0.10000000000000002, two float64s, are one key")
	}
	ratio := mustRule(t, "field:ratio")
	if key(ratio, &testpb.PayRequest{Ratio: 0.5}) != key(amount, &testpb.PayRequest{Amount: 0.5}) {
		t.Error("float 0.5 and double 0.5 are two keys")
	}
	if key(ratio, &testpb.PayRequest{Ratio: 0.1}) == key(amount, &testpb.PayRequest{Amount: 0.1}) {
		t.Error("float 0.1 (0.10000000149011612) and double 0.1 are one key")
	}
	negZero := math.Copysign(0, -1)
	if canonicalKey(&testpb.PayRequest{UserId: "u", Amount: negZero}) != canonicalKey(&testpb.PayRequest{UserId: "u"}) {
		t.Error("-0 and 0 are two keys inside a message")
	}
}

// TestCanonicalNumberForms: the numbers of the canonical form are built
// without CanonicalNumber's allocations, and must be exactly its output,
// or a message field would hash unlike the same value as a key field of
// another version.
func TestCanonicalNumberForms(t *testing.T) {
	ints := []int64{0, 1, -1, 7, 10, -10, 100, 1234500, 1e18, math.MaxInt64, math.MinInt64, math.MaxInt32, math.MinInt32}
	uints := []uint64{0, 1, 10, 1e19, math.MaxUint64}
	floats := []float64{0, math.Copysign(0, -1), 0.1, 0.10000000000000002, 1.5, -2.5e-10, 7, 100, 1e21, 1e22, 1e-7,
		123456789012345680000, 5e-324, math.SmallestNonzeroFloat64, math.MaxFloat64, -math.MaxFloat64,
		float64(float32(0.1)), float64(float32(16777217)), 9007199254740993}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 5000; i++ {
		ints = append(ints, int64(r.Uint64())>>r.IntN(64))
		uints = append(uints, r.Uint64()>>r.IntN(64))
		if f := math.Float64frombits(r.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
			floats = append(floats, f)
		}
		floats = append(floats, float64(r.IntN(1e6))/float64(1+r.IntN(1000)))
	}
	for _, n := range ints {
		checkNumberForm(t, strconv.FormatInt(n, 10), func(hs *keyspec.Hasher) { addInt(hs, n) })
	}
	for _, n := range uints {
		checkNumberForm(t, strconv.FormatUint(n, 10), func(hs *keyspec.Hasher) { addUint(hs, n) })
	}
	for _, f := range floats {
		checkNumberForm(t, strconv.FormatFloat(f, 'g', -1, 64), func(hs *keyspec.Hasher) { addFloat(hs, f) })
	}
}

func checkNumberForm(t testing.TB, text string, add func(*keyspec.Hasher)) {
	t.Helper()
	want, err := keyspec.CanonicalNumber(text)
	if err != nil {
		t.Fatalf("%s: %v", text, err)
	}
	ref := keyspec.NewHasher()
	ref.AddString(keyspec.Number, want)
	hs := keyspec.NewHasher()
	add(hs)
	if hs.Key() != ref.Key() {
		t.Fatalf("%s is not added as %s", text, want)
	}
}

func FuzzCanonicalNumber(f *testing.F) {
	f.Add(int64(100), 0.1)
	f.Add(int64(-7), 1e21)
	f.Fuzz(func(t *testing.T, n int64, x float64) {
		checkNumberForm(t, strconv.FormatInt(n, 10), func(hs *keyspec.Hasher) { addInt(hs, n) })
		checkNumberForm(t, strconv.FormatUint(uint64(n), 10), func(hs *keyspec.Hasher) { addUint(hs, uint64(n)) })
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			checkNumberForm(t, strconv.FormatFloat(x, 'g', -1, 64), func(hs *keyspec.Hasher) { addFloat(hs, x) })
		}
	})
}

// TestCanonicalAllocations: scalar and message fields cost no allocation,
// however many there are; only the writer's stack of open messages does,
// once per message hashed.
func TestCanonicalAllocations(t *testing.T) {
	req := &testpb.PayRequest{
		Order:  &testpb.Order{Id: "O-1", Channel: testpb.Channel_CHANNEL_WEB, Priority: ptr(int32(3))},
		UserId: "u-1", Amount: 9.75, Gift: true, Nonce: []byte{1, 2}, Seq: 1234567, Ratio: 0.1,
		S32: -1, F64: 2, Sf32: -3, U32: 4, I32: 5, S64: -6, F32: 7, Sf64: -8000,
	}
	hs := keyspec.NewHasher()
	defer hs.Discard()
	m := req.ProtoReflect()
	if n := testing.AllocsPerRun(100, func() { addCanonical(hs, m) }); n > 1 {
		t.Fatalf("%v allocations to hash a request of 17 scalar fields, want at most 1", n)
	}
}

// dynamicFile is a proto2 file for what testpb (proto3) cannot show:
// defaults other than zero, a real oneof, extensions, and fields declared
// out of number order.
//
//	syntax = "proto2";
//	message Empty {}
//	message P2 {
//	  optional string later = 7;            // declared first
//	  optional int32 n = 1 [default = 5];
//	  optional P2 child = 3;
//	  oneof choice { int32 a = 4; Empty e = 5; }
//	  optional double d = 6 [default = nan];
//	  extensions 100 to 200;
//	}
//	message Sorted { optional int32 n = 1; optional string later = 7; }
//	extend P2 { optional int32 ext = 100; optional string ext2 = 101; }
func dynamicFile(t *testing.T) protoreflect.FileDescriptor {
	t.Helper()
	opt := descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum()
	field := func(name string, num int32, typ descriptorpb.FieldDescriptorProto_Type) *descriptorpb.FieldDescriptorProto {
		return &descriptorpb.FieldDescriptorProto{Name: proto.String(name), Number: proto.Int32(num), Label: opt, Type: typ.Enum()}
	}
	msg := func(f *descriptorpb.FieldDescriptorProto, typeName string) *descriptorpb.FieldDescriptorProto {
		f.TypeName = proto.String(typeName)
		return f
	}
	n := field("n", 1, descriptorpb.FieldDescriptorProto_TYPE_INT32)
	n.DefaultValue = proto.String("5")
	a := field("a", 4, descriptorpb.FieldDescriptorProto_TYPE_INT32)
	a.OneofIndex = proto.Int32(0)
	e := msg(field("e", 5, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE), ".zerolock.canonicaltest.Empty")
	e.OneofIndex = proto.Int32(0)
	d := field("d", 6, descriptorpb.FieldDescriptorProto_TYPE_DOUBLE)
	d.DefaultValue = proto.String("nan")
	ext := field("ext", 100, descriptorpb.FieldDescriptorProto_TYPE_INT32)
	ext.Extendee = proto.String(".zerolock.canonicaltest.P2")
	ext2 := field("ext2", 101, descriptorpb.FieldDescriptorProto_TYPE_STRING)
	ext2.Extendee = proto.String(".zerolock.canonicaltest.P2")
	fdp := &descriptorpb.FileDescriptorProto{
		Name:    proto.String("zerolock/canonicaltest.proto"),
		Package: proto.String("zerolock.canonicaltest"),
		Syntax:  proto.String("proto2"),
		MessageType: []*descriptorpb.DescriptorProto{
			{Name: proto.String("Empty")},
			{
				Name: proto.String("P2"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("later", 7, descriptorpb.FieldDescriptorProto_TYPE_STRING), n,
					msg(field("child", 3, descriptorpb.FieldDescriptorProto_TYPE_MESSAGE), ".zerolock.canonicaltest.P2"),
					a, e, d,
				},
				OneofDecl:      []*descriptorpb.OneofDescriptorProto{{Name: proto.String("choice")}},
				ExtensionRange: []*descriptorpb.DescriptorProto_ExtensionRange{{Start: proto.Int32(100), End: proto.Int32(201)}},
			},
			{
				Name: proto.String("Sorted"),
				Field: []*descriptorpb.FieldDescriptorProto{
					field("n", 1, descriptorpb.FieldDescriptorProto_TYPE_INT32),
					field("later", 7, descriptorpb.FieldDescriptorProto_TYPE_STRING),
				},
			},
		},
		Extension: []*descriptorpb.FieldDescriptorProto{ext, ext2},
	}
	fd, err := protodesc.NewFile(fdp, new(protoregistry.Files))
	if err != nil {
		t.Fatal(err)
	}
	return fd
}

// TestCanonicalProto2 covers explicit defaults, oneofs, extensions and
// field order on a proto2 message built at run time.
func TestCanonicalProto2(t *testing.T) {
	fd := dynamicFile(t)
	p2 := fd.Messages().ByName("P2")
	empty := fd.Messages().ByName("Empty")
	ext := dynamicpb.NewExtensionType(fd.Extensions().ByName("ext"))
	ext2 := dynamicpb.NewExtensionType(fd.Extensions().ByName("ext2"))
	type set func(m *dynamicpb.Message)
	field := func(name string, v protoreflect.Value) set {
		return func(m *dynamicpb.Message) { m.Set(p2.Fields().ByName(protoreflect.Name(name)), v) }
	}
	child := func(sets ...set) set {
		return func(m *dynamicpb.Message) {
			c := dynamicpb.NewMessage(p2)
			for _, s := range sets {
				s(c)
			}
			m.Set(p2.Fields().ByName("child"), protoreflect.ValueOfMessage(c))
		}
	}
	extension := func(xt protoreflect.ExtensionType, v protoreflect.Value) set {
		return func(m *dynamicpb.Message) { m.Set(xt.TypeDescriptor(), v) }
	}
	build := func(sets ...set) *dynamicpb.Message {
		m := dynamicpb.NewMessage(p2)
		for _, s := range sets {
			s(m)
		}
		return m
	}
	unset := canonicalKey(build())

	for name, m := range map[string]*dynamicpb.Message{
		"default 5 set":            build(field("n", protoreflect.ValueOfInt32(5))),
		"empty string set":         build(field("later", protoreflect.ValueOfString(""))),
		"default NaN set":          build(field("d", protoreflect.ValueOfFloat64(math.NaN()))),
		"empty child":              build(child()),
		"child of defaults":        build(child(field("n", protoreflect.ValueOfInt32(5)), child())),
		"extension at its default": build(extension(ext, protoreflect.ValueOfInt32(0))),
	} {
		if canonicalKey(m) != unset {
			t.Errorf("%s: hashes unlike the unset field", name)
		}
	}

	distinct := map[string]*dynamicpb.Message{
		"unset":                 build(),
		"n 0 (not its default)": build(field("n", protoreflect.ValueOfInt32(0))),
		"n 6":                   build(field("n", protoreflect.ValueOfInt32(6))),
		"d 0":                   build(field("d", protoreflect.ValueOfFloat64(0))),
		"oneof a 0":             build(field("a", protoreflect.ValueOfInt32(0))),
		"oneof a 1":             build(field("a", protoreflect.ValueOfInt32(1))),
		"oneof e empty":         build(field("e", protoreflect.ValueOfMessage(dynamicpb.NewMessage(empty)))),
		"child n 0":             build(child(field("n", protoreflect.ValueOfInt32(0)))),
		"later x":               build(field("later", protoreflect.ValueOfString("x"))),
		"ext 1":                 build(extension(ext, protoreflect.ValueOfInt32(1))),
		"ext2 x":                build(extension(ext2, protoreflect.ValueOfString("x"))),
	}
	seen := map[string]string{}
	for name, m := range distinct {
		k := canonicalKey(m)
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s hash alike", name, other)
		}
		seen[k] = name
	}

	t.Run("round trip keeps extensions the resolver knows", func(t *testing.T) {
		m := build(field("later", protoreflect.ValueOfString("x")), extension(ext, protoreflect.ValueOfInt32(1)),
			extension(ext2, protoreflect.ValueOfString("y")), child(field("a", protoreflect.ValueOfInt32(0))))
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		types := new(protoregistry.Types)
		for _, xt := range []protoreflect.ExtensionType{ext, ext2} {
			if err := types.RegisterExtension(xt); err != nil {
				t.Fatal(err)
			}
		}
		again := dynamicpb.NewMessage(p2)
		if err := (proto.UnmarshalOptions{Resolver: types}).Unmarshal(b, again); err != nil {
			t.Fatal(err)
		}
		if canonicalKey(again) != canonicalKey(m) {
			t.Error("a message with extensions hashes differently after a round trip")
		}
		// A server that does not know the extensions sees unknown fields.
		blind := dynamicpb.NewMessage(p2)
		if err := (proto.UnmarshalOptions{Resolver: new(protoregistry.Types)}).Unmarshal(b, blind); err != nil {
			t.Fatal(err)
		}
		if canonicalKey(blind) != canonicalKey(build(field("later", protoreflect.ValueOfString("x")), child(field("a", protoreflect.ValueOfInt32(0))))) {
			t.Error("extensions the server cannot resolve are not ignored as unknown fields")
		}
	})

	t.Run("fields in number order, not declaration order", func(t *testing.T) {
		sorted := dynamicpb.NewMessage(fd.Messages().ByName("Sorted"))
		sorted.Set(sorted.Descriptor().Fields().ByName("n"), protoreflect.ValueOfInt32(1))
		sorted.Set(sorted.Descriptor().Fields().ByName("later"), protoreflect.ValueOfString("x"))
		m := build(field("n", protoreflect.ValueOfInt32(1)), field("later", protoreflect.ValueOfString("x")))
		if canonicalKey(m) != canonicalKey(sorted) {
			t.Error("the same field numbers and values hash differently when declared in another order")
		}
	})
}

// discardUnknown drops the unknown fields of m and every message in it.
func discardUnknown(m protoreflect.Message) {
	m.SetUnknown(nil)
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := 0; i < v.List().Len(); i++ {
				discardUnknown(v.List().Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				discardUnknown(mv.Message())
				return true
			})
		case !fd.IsList() && !fd.IsMap() && fd.Message() != nil:
			discardUnknown(v.Message())
		}
		return true
	})
}

// FuzzCanonical: any bytes that decode as a request have one canonical
// form, the same after a marshal and unmarshal round trip and without
// their unknown fields, and computing it never panics.
func FuzzCanonical(f *testing.F) {
	rich := &testpb.PayRequest{
		Order: &testpb.Order{Id: "O", Items: []*testpb.Item{{Sku: "s", Quantity: 2}, {}}, Channel: testpb.Channel_CHANNEL_APP,
			Tags: map[string]string{"a": "b", "c": ""}, Priority: ptr(int32(0)), Labels: []string{"x", ""}},
		UserId: "u", Amount: math.NaN(), Gift: true, Nonce: []byte{0}, Seq: 1 << 63, Ratio: float32(math.Inf(-1)),
		S32: -1, ByLine: map[int64]*testpb.Item{-1: {}, 3: {Sku: "l"}},
	}
	seed, _ := proto.Marshal(rich)
	f.Add(seed)
	f.Add(append(seed, 0xc2, 0x3e, 0x01, 0x00)) // an unknown field 1000
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})
	f.Add([]byte{0x0a, 0x02, 0x28, 0x00}) // order { priority: 0 }
	f.Fuzz(func(t *testing.T, data []byte) {
		var req testpb.PayRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		key := canonicalKey(&req)
		b, err := proto.Marshal(&req)
		if err != nil {
			t.Fatalf("a decoded request does not marshal: %v", err)
		}
		var again testpb.PayRequest
		if err := proto.Unmarshal(b, &again); err != nil {
			t.Fatalf("a marshalled request does not decode: %v", err)
		}
		if canonicalKey(&again) != key {
			t.Fatalf("canonical form changes in a round trip: %v", &req)
		}
		known := proto.Clone(&req)
		discardUnknown(known.ProtoReflect())
		if canonicalKey(known) != key {
			t.Fatalf("canonical form depends on unknown fields: %v", &req)
		}
		if canonicalKey(&req) != key {
			t.Fatal("canonical form is not deterministic")
		}
	})
}
