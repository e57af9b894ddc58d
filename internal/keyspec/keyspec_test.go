package keyspec

import (
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
)

var httpSources = Sources{"path": Name, "header": Name, "json": DottedPath, "ip": NoName}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		want    Spec
		wantErr error
	}{
		{raw: "header:Idempotency-Key", want: Spec{Raw: "header:Idempotency-Key", Source: "header", Name: "Idempotency-Key"}},
		{raw: "json:items.0.sku", want: Spec{Raw: "json:items.0.sku", Source: "json", Name: "items.0.sku", Path: []string{"items", "0", "sku"}}},
		{raw: "ip", want: Spec{Raw: "ip", Source: "ip"}},
		{raw: "cookie:sid", wantErr: ErrUnknownSource},
		{raw: "", wantErr: ErrUnknownSource},
		{raw: "header:", wantErr: ErrBadSpec},
		{raw: "header", wantErr: ErrBadSpec},
		{raw: "ip:x", wantErr: ErrBadSpec},
		{raw: "json:a..b", wantErr: ErrBadSpec},
		{raw: "json:.a", wantErr: ErrBadSpec},
		{raw: "json:", wantErr: ErrBadSpec},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := Parse(tc.raw, httpSources)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.raw) {
					t.Fatalf("Parse(%q) error = %v, want %v naming the spec", tc.raw, err, tc.wantErr)
				}
				return
			}
			if err != nil || got.Raw != tc.want.Raw || got.Source != tc.want.Source ||
				got.Name != tc.want.Name || strings.Join(got.Path, "|") != strings.Join(tc.want.Path, "|") {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v", tc.raw, got, err, tc.want)
			}
		})
	}
}

func TestCanonicalNumber(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"0.000", "0"}, {"0e10", "0"},
		{"1", "1e0"}, {"1.0", "1e0"}, {"1e0", "1e0"}, {"10e-1", "1e0"}, {"0.1e1", "1e0"},
		{"100", "1e2"}, {"1e2", "1e2"}, {"1E+2", "1e2"}, {"100.00", "1e2"},
		{"0.10", "1e-1"}, {"-12.50", "-125e-1"},
		{"123456789012345678901234567890", "12345678901234567890123456789e1"},
		{"1e999999999", "1e999999999"},
	} {
		got, err := CanonicalNumber(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("CanonicalNumber(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "-", "+1", ".5", "01", "1.", "1e", "0x1", "NaN", "Inf", "1e99999999999999999999", " 1"} {
		if _, err := CanonicalNumber(bad); !errors.Is(err, ErrNotNumber) {
			t.Errorf("CanonicalNumber(%q) error = %v, want ErrNotNumber", bad, err)
		}
	}
}

func TestLookupJSON(t *testing.T) {
	var root any
	dec := json.NewDecoder(strings.NewReader(`{"order":{"id":42,"items":[{"sku":"a"},{"sku":"b"}],"note":null},"0":"zero"}`))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		want any
		ok   bool
	}{
		{"order.id", json.Number("42"), true},
		{"order.items.1.sku", "b", true},
		{"0", "zero", true}, // a numeric segment on an object is a member name
		{"order.items.2.sku", nil, false},
		{"order.items.-1.sku", nil, false},
		{"order.items.x", nil, false},
		{"order.note", nil, false}, // null counts as missing
		{"order.id.deeper", nil, false},
		{"missing", nil, false},
	} {
		path, _ := ParsePath(tc.path)
		got, ok := LookupJSON(root, path)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("LookupJSON(%q) = %v, %v; want %v, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func keyOf(values ...string) string {
	hs := NewHasher()
	for _, v := range values {
		hs.AddString(String, v)
	}
	return hs.Key("zerolock", "http", "POST", "/orders")
}

func TestKeyIsBoundedAndInjective(t *testing.T) {
	a, b := keyOf("ab", "c"), keyOf("a", "bc")
	if a == b {
		t.Fatal(`("ab","c") and ("a","bc") share a key`)
	}
	if keyOf("ab", "c") != a {
		t.Fatal("the same values gave two keys")
	}
	long := keyOf(strings.Repeat("x", 1<<20))
	if len(long) != len(a) || strings.Contains(long, "xxx") {
		t.Fatalf("key length depends on the input or leaks it: %d vs %d", len(long), len(a))
	}
	if !strings.HasPrefix(a, "zerolock:http:POST:/orders:") {
		t.Fatalf("key %q lacks its namespace", a)
	}
	str, num := NewHasher(), NewHasher()
	str.AddString(String, "1")
	num.AddString(Number, "1")
	if str.Key() == num.Key() {
		t.Fatal(`the string "1" and the number 1 share a key`)
	}
}

func TestAddJSONCanonical(t *testing.T) {
	key := func(doc string) string {
		var v any
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		hs := NewHasher()
		if err := hs.AddJSON(v); err != nil {
			t.Fatal(err)
		}
		return hs.Key()
	}
	if key(`{"a":1,"b":[1.0,"x"]}`) != key(`{"b":[1e0,"x"],"a":1.00}`) {
		t.Fatal("equal JSON values with other member order or number spelling gave two keys")
	}
	if key(`{"a":1}`) == key(`{"a":"1"}`) || key(`"true"`) == key(`true`) || key(`[1]`) == key(`"[1]"`) {
		t.Fatal("JSON values of different kinds share a key")
	}
}

// FuzzKeyInjective: two different tuples of values never share a key.
func FuzzKeyInjective(f *testing.F) {
	f.Add("ab", "c", "a", "bc")
	f.Add("", "x", "x", "")
	f.Add("a\x00", "b", "a", "\x00b")
	f.Add("\x00\x00\x00\x00\x00\x00\x00\x01", "", "", "\x01")
	f.Fuzz(func(t *testing.T, a1, a2, b1, b2 string) {
		same := a1 == b1 && a2 == b2
		if (keyOf(a1, a2) == keyOf(b1, b2)) != same {
			t.Fatalf("(%q,%q) vs (%q,%q): key equality %v, tuple equality %v",
				a1, a2, b1, b2, !same, same)
		}
		if (keyOf(a1) == keyOf(a1, a2)) != false {
			t.Fatalf("a one-value and a two-value tuple share a key")
		}
	})
}

// FuzzCanonicalNumber: two spellings share a canonical form exactly when
// they denote the same value (checked with exact rationals where the
// exponent is small enough to compute), and no input panics.
func FuzzCanonicalNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "1.50", "15e-1", "1e2", "100", "-1", "0.001", "1e-3", "12345678901234567890"} {
		f.Add(s, "1")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ca, errA := CanonicalNumber(a)
		cb, errB := CanonicalNumber(b)
		if errA != nil || errB != nil || len(a) > 40 || len(b) > 40 || bigExponent(a) || bigExponent(b) {
			return
		}
		ra, okA := new(big.Rat).SetString(a)
		rb, okB := new(big.Rat).SetString(b)
		if !okA || !okB {
			t.Fatalf("valid JSON numbers %q, %q not parsed by big.Rat", a, b)
		}
		if (ca == cb) != (ra.Cmp(rb) == 0) {
			t.Fatalf("%q -> %q, %q -> %q, but values equal = %v", a, ca, b, cb, ra.Cmp(rb) == 0)
		}
	})
}

// bigExponent reports an exponent too large for big.Rat to expand cheaply.
func bigExponent(s string) bool {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return false
	}
	exp := strings.TrimLeft(s[i+1:], "+-")
	return len(exp) > 3
}

// FuzzLookupJSON: no document or path panics the lookup or the hashing.
func FuzzLookupJSON(f *testing.F) {
	f.Add(`{"a":{"b":[1,{"c":"d"}]}}`, "a.b.1.c")
	f.Add(`[[[[[]]]]]`, "0.0.0.0")
	f.Add(`{"a":1e999999999}`, "a")
	f.Fuzz(func(t *testing.T, doc, path string) {
		segs, err := ParsePath(path)
		if err != nil {
			return
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(doc))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			return
		}
		if got, ok := LookupJSON(v, segs); ok {
			_ = NewHasher().AddJSON(got)
		}
	})
}
