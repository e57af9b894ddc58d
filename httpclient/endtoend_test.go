package httpclient_test

import (
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/httpclient"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// TestEndToEnd: a checkout service (zerolock's middleware, replay mode)
// pays through a payments service (replay mode) with the transport. The
// payment's first try hangs past AttemptTimeout; its retry, with the same
// key, finds the first still running (409, Zerolock-Mode: replay), and is
// the last try: the checkout answers that 409, which its replay rule does
// not keep. The client retries the checkout: it runs again, derives the
// same payment key, and gets the payment replayed, not made twice; a
// last retry gets the checkout's own stored answer.
func TestEndToEnd(t *testing.T) {
	srv := redistest.Start(t)
	store := zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
	payments := middleware.MustNewLockMiddleware(middleware.LockConf{Mode: middleware.ModeReplay, Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/pay", Keys: []string{"header:Authorization", "header:Idempotency-Key"},
	}}}, store)
	var made, refused atomic.Int32
	hold := make(chan struct{})
	payBase := resttest.Serve(t, func(s *rest.Server) {
		s.Use(func(next http.HandlerFunc) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				rw := &status{ResponseWriter: w}
				next(rw, r)
				if rw.code == http.StatusConflict && refused.Add(1) == 1 {
					close(hold) // the retry found the first running: let it finish
				}
			}
		})
		s.Use(payments.Handle)
	}, []rest.Route{{Method: http.MethodPost, Path: "/pay", Handler: func(w http.ResponseWriter, r *http.Request) {
		n := made.Add(1)
		if n == 1 {
			<-hold
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, "payment-%d", n)
	}}})

	pay := &http.Client{Transport: httpclient.MustNewTransport(httpclient.Conf{
		Routes:         []httpclient.Route{{Method: http.MethodPost, Path: "/pay"}},
		AttemptTimeout: 300 * time.Millisecond, MaxAttempts: 2,
	}, nil)}
	checkout := middleware.MustNewLockMiddleware(middleware.LockConf{Mode: middleware.ModeReplay, Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/checkout", Keys: []string{"header:Authorization", "header:Idempotency-Key"},
	}}}, store)
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(checkout.Handle) }, []rest.Route{{
		Method: http.MethodPost, Path: "/checkout", Handler: func(w http.ResponseWriter, r *http.Request) {
			req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, payBase+"/pay", nil)
			req.Header.Set("Authorization", r.Header.Get("Authorization"))
			resp, err := pay.Do(req)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			w.WriteHeader(resp.StatusCode)
			_, _ = w.Write(body)
		},
	}}, rest.WithTimeout(10*time.Second))

	send := func() resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/checkout", "", "Authorization", "Bearer alice", "Idempotency-Key", "cart-1")
	}
	if r := send(); r.Status != http.StatusConflict {
		t.Fatalf("checkout 1: %d %q, want the payment's 409 (its retry found the first running)", r.Status, r.Body)
	}
	// The client retries until it gets its answer, as one would.
	deadline := time.Now().Add(10 * time.Second)
	r := send()
	for r.Status == http.StatusConflict && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		r = send()
	}
	if r.Status != http.StatusCreated || r.Body != "payment-1" || r.Header.Get(middleware.ReplayedHeader) != "" {
		t.Fatalf("checkout retried: %d %q (replayed %q), want a fresh 201 payment-1", r.Status, r.Body, r.Header.Get(middleware.ReplayedHeader))
	}
	if r := send(); r.Status != http.StatusCreated || r.Body != "payment-1" || r.Header.Get(middleware.ReplayedHeader) != "true" {
		t.Fatalf("checkout retried again: %d %q, want its stored 201 payment-1, replayed", r.Status, r.Body)
	}
	if n := made.Load(); n != 1 {
		t.Fatalf("%d payments made, want 1", n)
	}
	if refused.Load() == 0 {
		t.Fatal("the payment's retry never met the first running: the test did not test that")
	}
}

// status records the status a handler wrote.
type status struct {
	http.ResponseWriter
	code int
}

func (s *status) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}
