package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// TestRenewKeepsSlowHandlerLocked: by default a 300 ms lock outlives a 1 s
// handler,
// so a duplicate late in the handler is still refused; deleting the key
// cancels the handler's context with ErrLockLost.
func TestRenewKeepsSlowHandlerLocked(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	m := mustMiddleware(t, middleware.LockConf{Expire: 300 * time.Millisecond, Fence: true,
		Rules: []middleware.LockRule{{Method: http.MethodPost, Path: "/slow/:id", Keys: []string{"path:id", "header:X-User"}}}},
		newStore(srv))
	causes := make(chan error, 1)
	fences := make(chan int64, 10)
	entered := make(chan struct{}, 10)
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/slow/:id", Handler: func(w http.ResponseWriter, r *http.Request) {
			fence, _ := zerolock.FenceFromContext(r.Context())
			fences <- fence
			entered <- struct{}{}
			if r.URL.Query().Get("wait") == "lost" {
				<-r.Context().Done()
				causes <- context.Cause(r.Context())
				return
			}
			time.Sleep(time.Second)
		}},
	})
	done := make(chan resttest.Result, 1)
	go func() { done <- resttest.Do(t, http.MethodPost, base+"/slow/1", "", "X-User", "u") }()
	<-entered
	time.Sleep(800 * time.Millisecond) // far past the 300 ms expiry
	if r := resttest.Do(t, http.MethodPost, base+"/slow/1", "", "X-User", "u"); r.Status != http.StatusConflict {
		t.Fatalf("duplicate late in a renewed handler: %d, want 409", r.Status)
	}
	if r := <-done; r.Status != http.StatusOK {
		t.Fatalf("slow handler: %d", r.Status)
	}
	first := <-fences

	go func() { done <- resttest.Do(t, http.MethodPost, base+"/slow/2?wait=lost", "", "X-User", "u") }()
	<-entered
	if second := <-fences; second <= 0 || first <= 0 {
		t.Fatalf("fencing tokens %d, %d: want positive", first, second)
	}
	keys := admin.Keys(context.Background(), "zerolock:http:*").Val()
	var lockKey string
	for _, k := range keys {
		if ttl := admin.PTTL(context.Background(), k).Val(); ttl > 0 {
			lockKey = k
		}
	}
	if lockKey == "" {
		t.Fatalf("no held lock key among %v", keys)
	}
	admin.Del(context.Background(), lockKey)
	select {
	case cause := <-causes:
		if !errors.Is(cause, zerolock.ErrLockLost) {
			t.Fatalf("handler context cause = %v, want ErrLockLost", cause)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the handler's context outlived its lock")
	}
	<-done
}

// TestRenewOutlivesServerTimeout: by default, a handler that goes on
// working after go-zero's timeout answered 503 keeps its lock (inflight
// mode) or permit (limit mode) renewed until it returns: a duplicate three
// expiries later is still refused (409, 429), and once the handler
// returns the next request is served. Before, the watch ran on the
// request's context, which the timeout cancels: renewals stopped at 200
// ms, the 300 ms lock expired, and the duplicate ran beside the first.
func TestRenewOutlivesServerTimeout(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule middleware.LockRule
		want int
	}{
		{"inflight", middleware.LockRule{Method: http.MethodPost, Path: "/work", Keys: []string{"header:X-User"}}, http.StatusConflict},
		{"limit", middleware.LockRule{Method: http.MethodPost, Path: "/work", Keys: []string{"header:X-User"},
			Mode: middleware.ModeLimit, Permits: 1}, http.StatusTooManyRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			m := mustMiddleware(t, middleware.LockConf{Expire: 300 * time.Millisecond,
				Rules: []middleware.LockRule{tc.rule}}, newStore(srv))
			entered := make(chan struct{}, 10)
			finish := make(chan struct{})
			var once sync.Once
			finished := func() { once.Do(func() { close(finish) }) }
			t.Cleanup(finished) // before the server's shutdown, which waits for handlers
			base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
				{Method: http.MethodPost, Path: "/work", Handler: func(w http.ResponseWriter, r *http.Request) {
					entered <- struct{}{}
					<-finish // the work goes on whatever the request's context says
				}},
			}, rest.WithTimeout(200*time.Millisecond))
			do := func() resttest.Result { return resttest.Do(t, http.MethodPost, base+"/work", "", "X-User", "u") }

			if r := do(); r.Status != http.StatusServiceUnavailable {
				t.Fatalf("a handler past its timeout: %d %s, want go-zero's 503", r.Status, r.Body)
			}
			<-entered
			time.Sleep(time.Second) // three expiries: only renewal keeps the lock this long
			if r := do(); r.Status != tc.want {
				t.Fatalf("a duplicate while the timed-out handler still works: %d %s, want %d", r.Status, r.Body, tc.want)
			}
			finished()
			deadline := time.Now().Add(10 * time.Second)
			for {
				r := do()
				if r.Status == http.StatusOK {
					break
				}
				if r.Status != tc.want || time.Now().After(deadline) {
					t.Fatalf("after the handler returned: %d %s, want it served", r.Status, r.Body)
				}
			}
		})
	}
}
