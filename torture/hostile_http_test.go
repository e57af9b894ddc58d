package torture

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// TestHostileHTTP sends generated hostile requests (malformed and deeply
// nested JSON, huge and chunked bodies, invalid UTF-8, missing and repeated
// fields, long headers, path tricks) to a real rest.Server with the
// middleware. No request may panic the server or get a 5xx, and every
// refusal the middleware makes is a 4xx with its JSON body.
func TestHostileHTTP(t *testing.T) {
	srv := redistest.Start(t)
	store := zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
	m, err := middleware.NewLockMiddleware(middleware.LockConf{MaxBodyBytes: 64 << 10, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/orders", Keys: []string{"header:X-User", "json:order.items.0.sku"}},
		{Method: http.MethodPost, Path: "/forms/:id", Keys: []string{"path:id", "form:ticket", "query:shop"}},
		{Method: http.MethodPut, Path: "/raw", Keys: []string{"body", "ip"}},
	}}, store)
	if err != nil {
		t.Fatal(err)
	}
	base := serveREST(t, m)
	requests := 2000
	if long() {
		requests = 12000
	}
	r := rand.New(rand.NewPCG(8, 8))
	client := &http.Client{Timeout: 10 * time.Second}
	counts := map[int]int{}
	for i := 0; i < requests; i++ {
		req := hostileRequest(r, base, i)
		resp, err := client.Do(req)
		if err != nil {
			continue // the server may close a connection on a request it cannot parse
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		counts[resp.StatusCode]++
		if resp.StatusCode >= 500 {
			t.Fatalf("request %d (%s %s) answered %d: %s", i, req.Method, req.URL.Path, resp.StatusCode, body)
		}
		var refusal struct{ Code string }
		if json.Unmarshal(body, &refusal) == nil && refusal.Code != "" && resp.StatusCode < 400 {
			t.Fatalf("request %d: a refusal %q with status %d", i, refusal.Code, resp.StatusCode)
		}
		if resp.StatusCode == http.StatusBadRequest && !bytes.Contains(body, []byte(`"code"`)) && req.URL.Path == "/orders" {
			t.Fatalf("request %d: a 400 from the middleware route without the JSON body: %q", i, body)
		}
	}
	if resp, err := client.Get(base + "/health"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("server unhealthy after the hostile requests: %v", err)
	}
	record(t, fmt.Sprintf("%d generated hostile requests, rest.Server + middleware", requests),
		fmt.Sprintf("status counts %v; no 5xx, no panic", counts))
}

// hostileRequest builds the i-th hostile request.
func hostileRequest(r *rand.Rand, base string, i int) *http.Request {
	var (
		method = http.MethodPost
		path   = "/orders"
		body   []byte
		ctype  = "application/json"
		header = http.Header{}
	)
	switch i % 12 {
	case 0: // deep nesting
		depth := 1 + r.IntN(20000)
		body = []byte(strings.Repeat(`{"order":`, depth) + `1` + strings.Repeat(`}`, depth))
	case 1: // malformed JSON
		body = []byte(`{"order":{"items":[{"sku":` + strings.Repeat(`[`, r.IntN(50)))
	case 2: // invalid UTF-8 in a value
		body = []byte("{\"order\":{\"items\":[{\"sku\":\"\xff\xfe\xc3\"}]}}")
	case 3: // huge body, declared
		body = bytes.Repeat([]byte("x"), 70<<10)
	case 4: // duplicated keys and huge numbers
		body = []byte(`{"order":{"items":[{"sku":1e999999999,"sku":-0.0e-0}]},"order":{"items":[{"sku":"a"}]}}`)
	case 5: // long and repeated headers
		header.Add("X-User", strings.Repeat("u", 1+r.IntN(60<<10)))
		header.Add("X-User", "second")
		body = []byte(`{"order":{"items":[{"sku":"s"}]}}`)
	case 6: // path tricks
		path = []string{"/orders/", "//orders", "/./orders", "/x/../orders", "/ORDERS", "/orders%00", "/forms/%2e%2e"}[r.IntN(7)]
		body = []byte(`{"order":{"items":[{"sku":"s"}]}}`)
	case 7: // forms: repeated, aliased, broken
		method, path = http.MethodPost, "/forms/"+fmt.Sprint(r.IntN(5))
		ctype = "application/x-www-form-urlencoded"
		body = []byte([]string{"ticket=1&ticket=2", "ticket[]=a&ticket=b", "ticket=%zz", "ticket=" + strings.Repeat("%", 10), ""}[r.IntN(5)])
		path += []string{"?shop=a", "?shop=a&shop=b", "", "?shop[]=x"}[r.IntN(4)]
	case 8: // multipart, possibly broken
		method, path = http.MethodPost, "/forms/1?shop=a"
		ctype = "multipart/form-data; boundary=XX"
		body = []byte("--XX\r\nContent-Disposition: form-data; name=\"ticket\"\r\n\r\nT\r\n" + []string{"--XX--\r\n", "", "--XX"}[r.IntN(3)])
	case 9: // raw body of random bytes
		method, path, ctype = http.MethodPut, "/raw", "application/octet-stream"
		body = make([]byte, r.IntN(4096))
		for j := range body {
			body[j] = byte(r.Uint32())
		}
	case 10: // random JSON-ish bytes
		body = make([]byte, r.IntN(512))
		for j := range body {
			body[j] = `{}[]":,0123456789.eE-+truefalsnul\ "`[r.IntN(36)]
		}
	case 11: // a plausible request, sometimes wrong content type
		body = []byte(fmt.Sprintf(`{"order":{"items":[{"sku":"s-%d"}]}}`, r.IntN(50)))
		if r.IntN(3) == 0 {
			ctype = "text/plain"
		}
	}
	req, _ := http.NewRequest(method, base+"/placeholder", bytes.NewReader(body))
	req.URL.Path, req.URL.RawPath = path, ""
	if q := strings.Index(path, "?"); q >= 0 {
		req.URL.Path, req.URL.RawQuery = path[:q], path[q+1:]
	}
	if strings.Contains(req.URL.Path, "%") {
		req.URL.RawPath = req.URL.Path
	}
	req.Header = header
	req.Header.Set("Content-Type", ctype)
	if header.Get("X-User") == "" {
		req.Header.Set("X-User", fmt.Sprint("u", r.IntN(3)))
	}
	if r.IntN(4) == 0 {
		req.ContentLength = -1 // chunked
	}
	return req
}

// serveREST runs a real rest.Server with m and OK handlers until the test
// ends. Load shedding is off (a shed request would be a 5xx) and so are
// the access logs of the thousands of requests.
func serveREST(t *testing.T, m *middleware.LockMiddleware) string {
	t.Helper()
	c := resttest.Conf(t)
	c.Name = "zerolock-torture"
	c.Log.Level, c.Log.Stat = "severe", false
	c.Middlewares.Shedding = false
	ok := func(w http.ResponseWriter, r *http.Request) {}
	return resttest.ServeConf(t, c, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/orders", Handler: ok},
		{Method: http.MethodPost, Path: "/forms/:id", Handler: ok},
		{Method: http.MethodPut, Path: "/raw", Handler: ok},
		{Method: http.MethodGet, Path: "/health", Handler: ok},
	})
}
