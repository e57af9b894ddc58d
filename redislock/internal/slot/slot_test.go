package slot

import (
	"strings"
	"testing"
)

func TestKeySlot(t *testing.T) {
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3 (the Redis Cluster spec's check value)", got)
	}
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"{user1000}.following", "{user1000}.followers", true},
		{"foo{}{bar}", "foo{}{bar}x", false}, // "{}" is no tag: the whole key
		{"foo{{bar}}zap", "{bar", true},      // the tag is "{bar"
		{"foo{bar}{zap}", "bar", true},
	} {
		if (Of(tc.a) == Of(tc.b)) != tc.same {
			t.Errorf("slot(%q)=%d slot(%q)=%d, same = %v", tc.a, Of(tc.a), tc.b, Of(tc.b), tc.same)
		}
	}
	if Of("foo") != 12182 {
		t.Fatalf("slot(foo) = %d, want 12182 (CLUSTER KEYSLOT foo)", Of("foo"))
	}
}

// FuzzCompanionKey: for any resource name, empty and brace-laden ones
// included, the companion shares the key's slot and differs from it, and
// two keys never share a companion.
func FuzzCompanionKey(f *testing.F) {
	for _, k := range []string{"", "{", "}", "{}", "a}b", "{a}", "x{}y", "}{", "order:42", "{u}:1", "a{b"} {
		f.Add(k, "b")
	}
	f.Fuzz(func(t *testing.T, key, other string) {
		c := Companion(key, "fence")
		if Of(c) != Of(key) {
			t.Fatalf("companion %q of %q: slot %d, want %d", c, key, Of(c), Of(key))
		}
		if c == key || !strings.Contains(c, "fence") {
			t.Fatalf("companion %q of %q is not a distinct fence key", c, key)
		}
		if other != key && Companion(other, "fence") == c {
			t.Fatalf("%q and %q share the companion %q", key, other, c)
		}
	})
}

// TestNamedByKey: NamedByKey is true exactly for the keys whose companions
// Companion names from the key alone (suffixes "|1" and "|2"), for keys of
// every form (a hash tag, a plain key, an empty key, a '}' that would end a
// wrapping tag early).
func TestNamedByKey(t *testing.T) {
	for _, key := range []string{"order:1", "{user:7}:cart", "", "a}b", "{}x", "{", "x{y}z{w}", "}{a}", "{}", "a{b"} {
		c := Companion(key, "zerolock.released")
		if want := !strings.HasSuffix(c, "|3"); NamedByKey(key) != want {
			t.Errorf("NamedByKey(%q) = %v, but Companion names %q", key, !want, c)
		}
	}
}
