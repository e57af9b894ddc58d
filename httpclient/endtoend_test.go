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

// TestEndToEnd: a checkout service (zerolock's middleware, inflight mode)
// pays through a payments service (replay mode) with the transport. The
// payment's first try hangs past AttemptTimeout; its retry, with the same
// key, finds the first still running (409 with Retry-After), waits, and
// gets the first's result replayed. The client then retries the checkout
// itself: the checkout runs again, derives the same payment key, and the
// payment is replayed, not made twice.
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
		AttemptTimeout: 300 * time.Millisecond, MaxAttempts: 5,
	}, nil)}
	checkout := middleware.MustNewLockMiddleware(middleware.LockConf{Rules: []middleware.LockRule{{
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

	for i := 0; i < 2; i++ {
		r := resttest.Do(t, http.MethodPost, base+"/checkout", "", "Authorization", "Bearer alice", "Idempotency-Key", "cart-1")
		if r.Status != http.StatusCreated || r.Body != "payment-1" {
			t.Fatalf("checkout %d: %d %q, want 201 payment-1", i+1, r.Status, r.Body)
		}
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
