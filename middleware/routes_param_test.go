package middleware_test

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// TestParamRuleSkipsStaticRoute: a rule for /orders/:id does not catch the
// separate static route /orders/batch that the router chose.
func TestParamRuleSkipsStaticRoute(t *testing.T) {
	srv := redistest.Start(t)
	m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/orders/:id", Keys: []string{"path:id", "header:X-User"}},
	}}, newStore(srv))
	var batch atomic.Int32
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{
		{Method: http.MethodPost, Path: "/orders/:id", Handler: func(w http.ResponseWriter, r *http.Request) {}},
		{Method: http.MethodPost, Path: "/orders/batch", Handler: func(w http.ResponseWriter, r *http.Request) { batch.Add(1) }},
	})
	for i := 0; i < 2; i++ {
		if r := resttest.Do(t, http.MethodPost, base+"/orders/batch", ""); r.Status != http.StatusOK {
			t.Fatalf("static route under a :id rule: %d %s, want 200 untouched", r.Status, r.Body)
		}
	}
	if batch.Load() != 2 {
		t.Fatalf("static route reached %d times, want 2", batch.Load())
	}
	if r := resttest.Do(t, http.MethodPost, base+"/orders/7", "", "X-User", "u"); r.Status != http.StatusOK {
		t.Fatalf("param route: %d", r.Status)
	}
	if r := resttest.Do(t, http.MethodPost, base+"/orders/7", "", "X-User", "u"); r.Status != http.StatusConflict {
		t.Fatalf("param route repeat: %d, want 409", r.Status)
	}
}
