package middleware

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zeromicro/go-zero/rest/pathvar"
)

// The default fingerprint is the request as the handler reads it: equal
// for requests that differ only in spelling (JSON whitespace and member
// order, form field order, a multipart boundary), different for requests
// that differ in meaning.
func TestDefaultFingerprint(t *testing.T) {
	ru, err := compileRule(withDefaults(LockConf{Mode: ModeReplay}), compileOnly(), LockRule{
		Method: http.MethodPost, Path: "/accounts/:id/pay", Keys: []string{"claim:userId", "header:Idempotency-Key"},
	})
	if err != nil {
		t.Fatal(err)
	}
	type req struct{ target, contentType, body string }
	fp := func(r req) string {
		t.Helper()
		hr := httptest.NewRequest(http.MethodPost, r.target, strings.NewReader(r.body))
		hr.Header.Set("Content-Type", r.contentType)
		hr = pathvar.WithVars(hr, map[string]string{"id": strings.Split(r.target, "/")[2]})
		read, rejection := readRequest(ru, hr, 1<<20)
		if rejection != nil {
			t.Fatalf("%+v: %v", r, rejection)
		}
		sum, rejection := read.fingerprint(ru)
		if rejection != nil {
			t.Fatalf("%+v: %v", r, rejection)
		}
		return string(sum[:])
	}
	const js, form = "application/json", "application/x-www-form-urlencoded"
	multi := func(boundary string, parts ...string) req {
		var b bytes.Buffer
		w := multipart.NewWriter(&b)
		_ = w.SetBoundary(boundary)
		for i := 0; i+2 < len(parts); i += 3 {
			if parts[i+1] == "" {
				_ = w.WriteField(parts[i], parts[i+2])
				continue
			}
			f, _ := w.CreateFormFile(parts[i], parts[i+1])
			_, _ = f.Write([]byte(parts[i+2]))
		}
		_ = w.Close()
		return req{"/accounts/a1/pay", w.FormDataContentType(), b.String()}
	}
	for _, tc := range []struct {
		name string
		a, b req
		same bool
	}{
		{"json spelling", req{"/accounts/a1/pay?x=1", js, `{"a":1,"b":[1,2]}`}, req{"/accounts/a1/pay?x=1", js + "; charset=utf-8", " {\"b\":[1,2.0], \"a\":1e0}\n"}, true},
		{"json value", req{"/accounts/a1/pay", js, `{"a":1}`}, req{"/accounts/a1/pay", js, `{"a":2}`}, false},
		{"path variable", req{"/accounts/a1/pay", js, `{}`}, req{"/accounts/a2/pay", js, `{}`}, false},
		{"query order", req{"/accounts/a1/pay?x=1&y=2", js, `{}`}, req{"/accounts/a1/pay?y=2&x=1", js, `{}`}, true},
		{"query value order", req{"/accounts/a1/pay?x=1&x=2", js, `{}`}, req{"/accounts/a1/pay?x=2&x=1", js, `{}`}, false},
		{"query value", req{"/accounts/a1/pay?x=1", js, `{}`}, req{"/accounts/a1/pay?x=2", js, `{}`}, false},
		{"form order", req{"/accounts/a1/pay", form, "a=1&b=2"}, req{"/accounts/a1/pay", form, "b=2&a=1"}, true},
		{"form value", req{"/accounts/a1/pay", form, "a=1&b=2"}, req{"/accounts/a1/pay", form, "a=1&b=3"}, false},
		{"multipart boundary", multi("b1", "a", "", "1", "doc", "x.txt", "hello"), multi("b2", "doc", "x.txt", "hello", "a", "", "1"), true},
		{"multipart file", multi("b1", "doc", "x.txt", "hello"), multi("b1", "doc", "x.txt", "hullo"), false},
		{"multipart file name", multi("b1", "doc", "x.txt", "hello"), multi("b1", "doc", "y.txt", "hello"), false},
		{"raw bytes", req{"/accounts/a1/pay", "text/plain", "a b"}, req{"/accounts/a1/pay", "text/plain", "a  b"}, false},
		{"content kind", req{"/accounts/a1/pay", js, `"x"`}, req{"/accounts/a1/pay", "text/plain", `"x"`}, false},
		{"invalid json as bytes", req{"/accounts/a1/pay", js, `{"a":`}, req{"/accounts/a1/pay", js, `{"a":`}, true},
		{"empty and none", req{"/accounts/a1/pay", js, ``}, req{"/accounts/a1/pay", js, `""`}, false},
	} {
		if same := fp(tc.a) == fp(tc.b); same != tc.same {
			t.Errorf("%s: equal fingerprints = %v, want %v", tc.name, same, tc.same)
		}
	}
}

// With Fingerprint specs, only their values count, read as keys are.
func TestSpecFingerprint(t *testing.T) {
	ru, err := compileRule(withDefaults(LockConf{Mode: ModeReplay}), compileOnly(), LockRule{
		Method: http.MethodPost, Path: "/pay", Keys: []string{"claim:userId", "header:Idempotency-Key"}, Fingerprint: []string{"json:amount"},
	})
	if err != nil {
		t.Fatal(err)
	}
	fp := func(body string) (string, *Error) {
		hr := httptest.NewRequest(http.MethodPost, "/pay", strings.NewReader(body))
		hr.Header.Set("Content-Type", "application/json")
		read, rejection := readRequest(ru, hr, 1<<20)
		if rejection != nil {
			return "", rejection
		}
		sum, rejection := read.fingerprint(ru)
		return string(sum[:]), rejection
	}
	a, _ := fp(`{"amount":5,"note":"a"}`)
	b, _ := fp(`{"amount":5.0,"note":"b"}`)
	c, _ := fp(`{"amount":6,"note":"a"}`)
	if a != b || a == c {
		t.Fatalf("fingerprints by amount: 5/a == 5/b %v (want true), 5/a == 6/a %v (want false)", a == b, a == c)
	}
	if _, rejection := fp(`{"note":"a"}`); rejection == nil || rejection.Status != http.StatusBadRequest || rejection.Code != "missing_field" {
		t.Fatalf("missing fingerprint field: %v, want 400 missing_field", rejection)
	}
}
