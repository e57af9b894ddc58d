package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// TestRenewKeepsSlowHandlerLocked: a 300 ms lock outlives a 1 s handler,
// so a duplicate late in the handler is still refused; deleting the key
// cancels the handler's context with ErrLockLost.
func TestRenewKeepsSlowHandlerLocked(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	m := mustMiddleware(t, middleware.LockConf{Expire: 300 * time.Millisecond, Renew: true, Fence: true,
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

func TestRenewRefusedInWindowMode(t *testing.T) {
	_, err := middleware.NewLockMiddleware(middleware.LockConf{Renew: true, Mode: middleware.ModeWindow,
		Rules: []middleware.LockRule{{Method: http.MethodPost, Path: "/a", Keys: []string{"ip"}}}}, nil)
	if !errors.Is(err, middleware.ErrBadConfig) {
		t.Fatalf("Renew with window mode: %v, want ErrBadConfig", err)
	}
}
