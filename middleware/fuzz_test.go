package middleware

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zeromicro/go-zero/rest/pathvar"
)

// FuzzLockKey derives keys from two requests that differ only in their
// field values: the keys are equal exactly when the values are, and no
// input panics. The seeds run under plain go test.
func FuzzLockKey(f *testing.F) {
	f.Add("ab", "c", "a", "bc")
	f.Add("1", "x", "1", "x")
	f.Add("\x00", "", "", "\x00")
	f.Add(`"quoted"`, "é", "\\u00e9", "e\u0301")
	ru, err := compileRule(withDefaults(LockConf{}), compileOnly(), LockRule{
		Method: http.MethodPost, Path: "/orders", Keys: []string{"header:X-A", "json:order.id"},
	})
	if err != nil {
		f.Fatal(err)
	}
	// key returns the request's key and the id it really carries: JSON
	// replaces invalid UTF-8 with U+FFFD, so two Go strings can make one
	// body, and equality must be judged on what was sent.
	key := func(header, id string) (string, string, bool) {
		idJSON, _ := json.Marshal(id) // any string, control bytes included
		var sent string
		_ = json.Unmarshal(idJSON, &sent)
		body := `{"order":{"id":` + string(idJSON) + `}}`
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-A", header)
		k, rejection := lockKey(ru, r, 1<<20)
		return k, sent, rejection == nil
	}
	f.Fuzz(func(t *testing.T, h1, id1, h2, id2 string) {
		k1, sent1, ok1 := key(h1, id1)
		k2, sent2, ok2 := key(h2, id2)
		if !ok1 || !ok2 {
			return // an empty or unrepresentable value: refused, not keyed
		}
		if (k1 == k2) != (h1 == h2 && sent1 == sent2) {
			t.Fatalf("(%q,%q) and (%q,%q): keys equal = %v", h1, id1, h2, id2, k1 == k2)
		}
		if strings.Contains(k1, h1) && len(h1) > 8 {
			t.Fatalf("key %q carries the raw value %q", k1, h1)
		}
	})
}

// FuzzFormKey: query and form keys from arbitrary query strings and bodies
// never panic, and two requests get one key only with the same values.
func FuzzFormKey(f *testing.F) {
	f.Add("shop=a", "ticket=1", "shop=a", "ticket=1")
	f.Add("shop=a&shop[]=b", "", "shop=a", "")
	f.Add("shop=%zz", "ticket=%", "", "")
	ru, err := compileRule(withDefaults(LockConf{}), compileOnly(), LockRule{
		Method: http.MethodPost, Path: "/f/:id", Keys: []string{"query:shop", "form:ticket", "path:id"},
	})
	if err != nil {
		f.Fatal(err)
	}
	values := func(query, body string) (string, string, string, bool) {
		r := httptest.NewRequest(http.MethodPost, "/f/7", strings.NewReader(body))
		r.URL.RawQuery = query
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		r = pathvar.WithVars(r, map[string]string{"id": "7"})
		k, rejection := lockKey(ru, r, 1<<20)
		req := &request{r: r, body: []byte(body), limit: 1 << 20}
		shop, _ := req.formValues("shop")
		ticket, _ := req.formValues("ticket")
		if rejection != nil || len(shop) != 1 || len(ticket) != 1 {
			return "", "", "", false
		}
		return k, shop[0], ticket[0], true
	}
	f.Fuzz(func(t *testing.T, q1, b1, q2, b2 string) {
		k1, s1, t1, ok1 := values(q1, b1)
		k2, s2, t2, ok2 := values(q2, b2)
		if !ok1 || !ok2 {
			return
		}
		if (k1 == k2) != (s1 == s2 && t1 == t2) {
			t.Fatalf("values (%q,%q) vs (%q,%q): keys equal = %v", s1, t1, s2, t2, k1 == k2)
		}
	})
}
