package zklock

import (
	"strings"
	"testing"
)

// unescapeKey is escapeKey's inverse; ok is false for a name escapeKey
// cannot make. It proves the escaping reversible.
func unescapeKey(name string) (key string, ok bool) {
	if name == "%" {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c != '%' {
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(name) {
			return "", false
		}
		hi, ok1 := unhex(name[i+1])
		lo, ok2 := unhex(name[i+2])
		if !ok1 || !ok2 {
			return "", false
		}
		b.WriteByte(hi<<4 | lo)
		i += 2
	}
	return b.String(), true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

func TestEscapeKey(t *testing.T) {
	for _, tc := range []struct{ key, name string }{
		{"zerolock:POST:/orders:7:B-1", "zerolock:POST:%2Forders:7:B-1"},
		{"", "%"},
		{".", "%2E"},
		{"..", "%2E%2E"},
		{"a%b", "a%25b"},
		{"zookeeper", "zookeeper"},
		{"é\x00\x7f", "%C3%A9%00%7F"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := escapeKey(tc.key)
			if got != tc.name {
				t.Fatalf("escapeKey(%q) = %q, want %q", tc.key, got, tc.name)
			}
			back, ok := unescapeKey(got)
			if !ok || back != tc.key {
				t.Fatalf("unescapeKey(%q) = %q, %v; want %q", got, back, ok, tc.key)
			}
		})
	}
}

func FuzzEscapeKey(f *testing.F) {
	f.Add("zerolock:POST:/orders:{\"id\":1}")
	f.Add("")
	f.Fuzz(func(t *testing.T, key string) {
		name := escapeKey(key)
		if name == "" || name == "." || name == ".." || strings.Contains(name, "/") {
			t.Fatalf("escapeKey(%q) = %q, not a node name", key, name)
		}
		for i := 0; i < len(name); i++ {
			if name[i] < 0x21 || name[i] > 0x7e {
				t.Fatalf("escapeKey(%q) = %q has byte %#x", key, name, name[i])
			}
		}
		if back, ok := unescapeKey(name); !ok || back != key {
			t.Fatalf("round trip of %q: %q, %v", key, back, ok)
		}
	})
}
