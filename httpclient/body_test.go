package httpclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerolock/zerolock/httpclient"
)

// TestRetryBodies: every try sends the whole body, whether the request
// can make it again (GetBody, which only the retries call) or not (a bare
// reader, read into memory once).
func TestRetryBodies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		getBody bool
	}{{"with GetBody", true}, {"a bare reader", false}} {
		t.Run(tc.name, func(t *testing.T) {
			rec, base := serve(t, func(try int, w http.ResponseWriter, r *http.Request) {
				if try == 1 {
					w.Header().Set("Retry-After", "0")
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.WriteHeader(http.StatusCreated)
			})
			const body = `{"amount":5}`
			req, err := http.NewRequest(http.MethodPost, base+"/pay/3", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			var gets atomic.Int32
			if tc.getBody {
				req.GetBody = func() (io.ReadCloser, error) {
					gets.Add(1)
					return io.NopCloser(strings.NewReader(body)), nil
				}
			} else {
				req.Body, req.GetBody = io.NopCloser(strings.NewReader(body)), nil
			}
			resp, err := client(t, httpclient.Conf{}).Do(req)
			if err != nil || resp.StatusCode != http.StatusCreated {
				t.Fatalf("answer %v, %v; want the retry's 201", resp, err)
			}
			resp.Body.Close()
			if _, bodies := rec.tries(); len(bodies) != 2 || bodies[0] != body || bodies[1] != body {
				t.Fatalf("tries sent bodies %q, want %q twice", bodies, body)
			}
			if want := map[bool]int32{true: 1, false: 0}[tc.getBody]; gets.Load() != want {
				t.Fatalf("GetBody called %d times, want %d (once per retry)", gets.Load(), want)
			}
		})
	}
}

// TestAttemptTimeoutSparesTheBody: AttemptTimeout bounds a try until its
// answer's headers arrive; a body that streams for longer is read whole.
func TestAttemptTimeoutSparesTheBody(t *testing.T) {
	_, base := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		for i := range 5 {
			_, _ = io.WriteString(w, strings.Repeat("x", i+1))
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond) // the body streams for 500ms
		}
	})
	resp, err := post(t, client(t, httpclient.Conf{AttemptTimeout: 200 * time.Millisecond}), context.Background(), base+"/pay/1", "x")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil || len(got) != 15 {
		t.Fatalf("read %d bytes, %v; want the whole 15-byte body", len(got), err)
	}
}

// TestLargeBodySentOnce: a body the request cannot make again (no GetBody)
// over 8 MiB is not held in memory for retries: it is sent once, whole,
// and a retryable answer to it is returned.
func TestLargeBodySentOnce(t *testing.T) {
	rec, base := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	big := strings.Repeat("x", 8<<20+1)
	req, err := http.NewRequest(http.MethodPost, base+"/pay/9", io.NopCloser(strings.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client(t, httpclient.Conf{}).Do(req)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("answer %v, %v; want the one try's 503", resp, err)
	}
	resp.Body.Close()
	if _, bodies := rec.tries(); len(bodies) != 1 || len(bodies[0]) != len(big) {
		t.Fatalf("%d tries, want 1 with the whole body", len(bodies))
	}
}

// TestLastTryCutIsATimeout: when AttemptTimeout cuts the last try, the
// error says so as a timeout (errors.Is context.DeadlineExceeded), not as
// the caller's cancellation.
func TestLastTryCutIsATimeout(t *testing.T) {
	hung := make(chan struct{})
	defer close(hung)
	_, base := serve(t, func(_ int, _ http.ResponseWriter, r *http.Request) {
		select {
		case <-hung:
		case <-r.Context().Done():
		}
	})
	_, err := post(t, client(t, httpclient.Conf{MaxAttempts: 1, AttemptTimeout: 100 * time.Millisecond}), context.Background(), base+"/pay/1", "x")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a try cut by AttemptTimeout: %v, want an error that is context.DeadlineExceeded", err)
	}
}

// TestNilHeader: a request built by hand without a header map, sent
// through RoundTrip directly, gets its key rather than a panic.
func TestNilHeader(t *testing.T) {
	rec, base := serve(t, func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	req, err := http.NewRequest(http.MethodPost, base+"/pay/1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header = nil
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	resp, err := httpclient.MustNewTransport(httpclient.Conf{Routes: []httpclient.Route{{Method: http.MethodPost, Path: "/pay/:id"}}}, transport).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if keys, _ := rec.tries(); len(keys) != 1 || keys[0] == "" {
		t.Fatalf("keys %q, want one try with a key", keys)
	}
}
