package middleware

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// FuzzLockKey derives keys from two requests that differ only in their
// field values: the keys are equal exactly when the values are, and no
// input panics. The seeds run under plain go test.
func FuzzLockKey(f *testing.F) {
	f.Add("ab", "c", "a", "bc")
	f.Add("1", "x", "1", "x")
	f.Add("\x00", "", "", "\x00")
	f.Add(`"quoted"`, "é", "\\u00e9", "e\u0301")
	ru, err := compileRule(withDefaults(LockConf{}), LockRule{
		Method: http.MethodPost, Path: "/orders", Keys: []string{"header:X-A", "json:order.id"},
	})
	if err != nil {
		f.Fatal(err)
	}
	key := func(header, id string) (string, bool) {
		body := `{"order":{"id":` + strconv.Quote(id) + `}}`
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
		r.Header.Set("X-A", header)
		k, rejection := lockKey("zerolock", ru, r, 1<<20)
		return k, rejection == nil
	}
	f.Fuzz(func(t *testing.T, h1, id1, h2, id2 string) {
		k1, ok1 := key(h1, id1)
		k2, ok2 := key(h2, id2)
		if !ok1 || !ok2 {
			return // an empty or unrepresentable value: refused, not keyed
		}
		if (k1 == k2) != (h1 == h2 && id1 == id2) {
			t.Fatalf("(%q,%q) and (%q,%q): keys equal = %v", h1, id1, h2, id2, k1 == k2)
		}
		if strings.Contains(k1, h1) && len(h1) > 8 {
			t.Fatalf("key %q carries the raw value %q", k1, h1)
		}
	})
}
