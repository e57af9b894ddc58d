package httpclient_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zerolock/zerolock/httpclient"
)

// recorder is a server that answers each try as answer says and records
// the key and body of every try.
type recorder struct {
	mu     sync.Mutex
	keys   []string
	bodies []string
	answer func(try int, w http.ResponseWriter, r *http.Request)
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	rec.keys = append(rec.keys, r.Header.Get(httpclient.KeyHeader))
	rec.bodies = append(rec.bodies, string(body))
	try := len(rec.keys)
	rec.mu.Unlock()
	rec.answer(try, w, r)
}

func (rec *recorder) tries() ([]string, []string) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]string(nil), rec.keys...), append([]string(nil), rec.bodies...)
}

func serve(t *testing.T, answer func(try int, w http.ResponseWriter, r *http.Request)) (*recorder, string) {
	t.Helper()
	rec := &recorder{answer: answer}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return rec, srv.URL
}

func client(t *testing.T, c httpclient.Conf) *http.Client {
	t.Helper()
	if c.Routes == nil {
		c.Routes = []httpclient.Route{{Method: http.MethodPost, Path: "/pay/:id"}}
	}
	c.Backoff = time.Millisecond
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	return &http.Client{Transport: httpclient.MustNewTransport(c, transport)}
}

func post(t *testing.T, cl *http.Client, ctx context.Context, url, body string, headers ...string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := cl.Do(req)
	if resp != nil {
		t.Cleanup(func() { resp.Body.Close() })
	}
	return resp, err
}

// Retried answers: each retry carries the first try's key and body, and
// stops at the first answer that is not retried.
func TestRetriesKeepKeyAndBody(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first func(w http.ResponseWriter)
	}{
		{"409 with Retry-After", func(w http.ResponseWriter) { w.Header().Set("Retry-After", "0"); w.WriteHeader(http.StatusConflict) }},
		{"425 with Retry-After", func(w http.ResponseWriter) { w.Header().Set("Retry-After", "0"); w.WriteHeader(http.StatusTooEarly) }},
		{"429 with Retry-After", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
		}},
		{"503 with Retry-After", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
		}},
		{"a dropped connection", func(w http.ResponseWriter) {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, base := serve(t, func(try int, w http.ResponseWriter, r *http.Request) {
				if try == 1 {
					tc.first(w)
					return
				}
				w.WriteHeader(http.StatusCreated)
			})
			resp, err := post(t, client(t, httpclient.Conf{}), context.Background(), base+"/pay/7", `{"amount":5}`)
			if err != nil || resp.StatusCode != http.StatusCreated {
				t.Fatalf("answer %v, %v; want the retry's 201", resp, err)
			}
			keys, bodies := rec.tries()
			if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] || bodies[0] != `{"amount":5}` || bodies[1] != bodies[0] {
				t.Fatalf("tries sent keys %q and bodies %q; want two tries with one key and the body twice", keys, bodies)
			}
		})
	}
}

// Answers that a retry cannot fix are returned as they are, after one try:
// a 5xx, a 4xx, and a 409 without Retry-After.
func TestNoRetry(t *testing.T) {
	for _, status := range []int{http.StatusInternalServerError, http.StatusBadRequest, http.StatusConflict,
		http.StatusUnprocessableEntity} {
		rec, base := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) })
		resp, err := post(t, client(t, httpclient.Conf{}), context.Background(), base+"/pay/1", "x")
		if err != nil || resp.StatusCode != status {
			t.Fatalf("%d: answer %v, %v", status, resp, err)
		}
		if keys, _ := rec.tries(); len(keys) != 1 {
			t.Fatalf("%d: %d tries, want 1", status, len(keys))
		}
	}
}

// MaxAttempts bounds the tries; the last answer is returned.
func TestMaxAttempts(t *testing.T) {
	rec, base := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	resp, err := post(t, client(t, httpclient.Conf{MaxAttempts: 4}), context.Background(), base+"/pay/1", "x")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("answer %v, %v; want the last 503", resp, err)
	}
	if keys, _ := rec.tries(); len(keys) != 4 {
		t.Fatalf("%d tries, want 4", len(keys))
	}
}

// A wait that the request's deadline would cut is not started: the answer
// that asked for it is returned at once.
func TestNeverPastTheDeadline(t *testing.T) {
	rec, base := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := post(t, client(t, httpclient.Conf{}), ctx, base+"/pay/1", "x")
	if err != nil || resp.StatusCode != http.StatusTooManyRequests || ctx.Err() != nil {
		t.Fatalf("answer %v, %v (ctx %v); want the 429 before the deadline", resp, err, ctx.Err())
	}
	if keys, _ := rec.tries(); len(keys) != 1 {
		t.Fatalf("%d tries, want 1", len(keys))
	}
}

// AttemptTimeout cuts a hung try, and the retry, with the same key, gets
// the answer.
func TestAttemptTimeout(t *testing.T) {
	hung := make(chan struct{})
	defer close(hung)
	rec, base := serve(t, func(try int, w http.ResponseWriter, r *http.Request) {
		if try == 1 {
			select {
			case <-hung:
			case <-r.Context().Done():
			}
			return
		}
		w.WriteHeader(http.StatusCreated)
	})
	resp, err := post(t, client(t, httpclient.Conf{AttemptTimeout: 200 * time.Millisecond}), context.Background(), base+"/pay/1", "x")
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("answer %v, %v; want the retry's 201", resp, err)
	}
	if keys, _ := rec.tries(); len(keys) != 2 || keys[0] != keys[1] {
		t.Fatalf("tries with keys %q, want two with one key", keys)
	}
}

// A key the request carries is kept; a request no route matches passes
// through untouched; without a served request, two requests get two keys.
func TestKeys(t *testing.T) {
	rec, base := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	cl := client(t, httpclient.Conf{})
	for _, send := range []func() (*http.Response, error){
		func() (*http.Response, error) {
			return post(t, cl, context.Background(), base+"/pay/1", "x", httpclient.KeyHeader, "mine")
		},
		func() (*http.Response, error) { return post(t, cl, context.Background(), base+"/other", "x") },
		func() (*http.Response, error) { return post(t, cl, context.Background(), base+"/pay/1", "x") },
		func() (*http.Response, error) { return post(t, cl, context.Background(), base+"/pay/1", "x") },
	} {
		if _, err := send(); err != nil {
			t.Fatal(err)
		}
	}
	keys, _ := rec.tries()
	if keys[0] != "mine" || keys[1] != "" || keys[2] == "" || keys[2] == keys[3] {
		t.Fatalf("keys %q: want the caller's, none for another route, then two of their own", keys)
	}
}

func TestBadConfig(t *testing.T) {
	for _, c := range []httpclient.Conf{
		{MaxAttempts: -1},
		{AttemptTimeout: -time.Second},
		{Routes: []httpclient.Route{{Method: "post", Path: "/a"}}},
		{Routes: []httpclient.Route{{Method: http.MethodPost, Path: "a"}}},
	} {
		if _, err := httpclient.NewTransport(c, nil); !errors.Is(err, httpclient.ErrBadConfig) {
			t.Errorf("%+v: %v, want ErrBadConfig", c, err)
		}
	}
}

// A Retry-After over a minute (zerolock's refusal of a result it could not
// keep, until its Retain passes) is the answer, not a wait: returned after
// one try, even without a deadline.
func TestLongRetryAfterIsTheAnswer(t *testing.T) {
	for _, v := range []string{"86400", "99999999999999999"} {
		rec, base := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", v)
			w.WriteHeader(http.StatusConflict)
		})
		resp, err := post(t, client(t, httpclient.Conf{}), context.Background(), base+"/pay/1", "x")
		if err != nil || resp.StatusCode != http.StatusConflict {
			t.Fatalf("Retry-After %s: answer %v, %v; want the 409", v, resp, err)
		}
		if keys, _ := rec.tries(); len(keys) != 1 {
			t.Fatalf("Retry-After %s: %d tries, want 1", v, len(keys))
		}
	}
}

// failing is a transport whose every try fails with err, counted.
type failing struct {
	err   error
	tries int
}

func (f *failing) RoundTrip(r *http.Request) (*http.Response, error) {
	f.tries++
	if r.Body != nil {
		r.Body.Close()
	}
	return nil, f.err
}

// TestPermanentErrorsNotRetried: an error no retry can fix (an untrusted
// certificate, a host name that does not resolve) is returned after one
// try; a reset connection is retried.
func TestPermanentErrorsNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name  string
		err   error
		tries int
	}{
		{"untrusted certificate", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, 1},
		{"no such host", &net.DNSError{Err: "no such host", Name: "pay.invalid", IsNotFound: true}, 1},
		{"DNS timeout", &net.DNSError{Err: "timeout", Name: "pay.example", IsTimeout: true}, 3},
		{"connection reset", syscall.ECONNRESET, 3},
	} {
		f := &failing{err: tc.err}
		c := httpclient.Conf{Routes: []httpclient.Route{{Method: http.MethodPost, Path: "/pay"}}, Backoff: time.Millisecond}
		cl := &http.Client{Transport: httpclient.MustNewTransport(c, f)}
		if _, err := cl.Post("http://pay.example/pay", "text/plain", strings.NewReader("x")); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
		if f.tries != tc.tries {
			t.Errorf("%s: %d tries, want %d", tc.name, f.tries, tc.tries)
		}
	}
}
