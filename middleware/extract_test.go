package middleware_test

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// formPost sends body to url as a urlencoded form.
func formPost(t *testing.T, url, body string) resttest.Result {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return resttest.Send(t, req)
}

// TestFormAndQueryAliases: go-zero's form tag reads the body's values
// before the query's and folds name[] into name. A key that read only one
// of them would let repeats through under new keys, so any second value
// is refused.
func TestFormAndQueryAliases(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/q", Keys: []string{"query:shop", "ip"}},
	}}, newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/q", Handler: func(w http.ResponseWriter, r *http.Request) {}},
	})
	for _, tc := range []struct {
		name, query, body string
		want              int
	}{
		{"query and body", "?shop=R1", "shop=A", http.StatusBadRequest},
		{"name and name[]", "", "shop=R&shop[]=A", http.StatusBadRequest},
		{"name[] alone", "", "shop[]=B", http.StatusOK},
		{"name[] alone again", "?shop[]=B", "", http.StatusConflict}, // same value B, same key
		{"empty values are ignored", "?shop=&shop=C", "", http.StatusOK},
	} {
		if r := formPost(t, base+"/q"+tc.query, tc.body); r.Status != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, r.Status, r.Body, tc.want)
		}
	}
}

// TestJSONKeyNeedsJSONBody: a json: key on a body that is not declared
// JSON is refused with 400 saying so, not read as an empty value.
func TestJSONKeyNeedsJSONBody(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, resttest.OrdersConf(middleware.ModeInflight, time.Second, "claim:userId", "json:orderId"), newStore(srv))
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/orders", Handler: func(w http.ResponseWriter, r *http.Request) {}},
	}, rest.WithJwt(jwtSecret))
	req, _ := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(`{"orderId":"A"}`))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+resttest.Token(t, jwtSecret, 1))
	if r := resttest.Send(t, req); r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "application/json") {
		t.Fatalf("JSON key on a text/plain body: %d %s, want 400 saying the body is not JSON", r.Status, r.Body)
	}
}

// TestBodyMultipartAndIPKeys: the body key hashes the raw body, a form:
// key reads a multipart form's field, and the ip key the client's
// address (X-Forwarded-For first).
func TestBodyMultipartAndIPKeys(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/raw", Keys: []string{"body"}},
		{Method: http.MethodPost, Path: "/upload", Keys: []string{"form:ticket"}},
		{Method: http.MethodPost, Path: "/ip", Keys: []string{"ip"}},
	}}, newStore(srv))
	ok := func(w http.ResponseWriter, r *http.Request) {}
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/raw", Handler: ok},
		{Method: http.MethodPost, Path: "/upload", Handler: ok},
		{Method: http.MethodPost, Path: "/ip", Handler: ok},
	})
	for i, tc := range []struct {
		body string
		want int
	}{{"a", 200}, {"a", 409}, {"b", 200}} {
		req, _ := http.NewRequest(http.MethodPost, base+"/raw", strings.NewReader(tc.body))
		if r := resttest.Send(t, req); r.Status != tc.want {
			t.Fatalf("body key request %d: %d, want %d", i, r.Status, tc.want)
		}
	}
	multipartPost := func(ticket string) int {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.WriteField("ticket", ticket)
		fw, _ := mw.CreateFormFile("file", "a.txt")
		_, _ = fw.Write([]byte("file content"))
		_ = mw.Close()
		req, _ := http.NewRequest(http.MethodPost, base+"/upload", &buf)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		return resttest.Send(t, req).Status
	}
	if a, b, c := multipartPost("T1"), multipartPost("T1"), multipartPost("T2"); a != 200 || b != 409 || c != 200 {
		t.Fatalf("multipart form key: %d %d %d, want 200 409 200", a, b, c)
	}
	// ip trusts X-Forwarded-For, as go-zero's httpx.GetRemoteAddr does.
	if a, b, c := resttest.Do(t, http.MethodPost, base+"/ip", "", "X-Forwarded-For", "10.0.0.1").Status,
		resttest.Do(t, http.MethodPost, base+"/ip", "", "X-Forwarded-For", "10.0.0.1").Status,
		resttest.Do(t, http.MethodPost, base+"/ip", "", "X-Forwarded-For", "10.0.0.2").Status; a != 200 || b != 409 || c != 200 {
		t.Fatalf("ip key: %d %d %d, want 200 409 200", a, b, c)
	}
}
