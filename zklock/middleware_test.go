package zklock_test

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/zklock"
)

// TestMiddleware runs the REST middleware on ZooKeeper locks in a real
// go-zero server: while one request is in its handler, duplicates are
// refused with 409 and a JSON body; once it completes, the same request
// passes again. Renew and Fence work, since Locks can Watch and Fence.
func TestMiddleware(t *testing.T) {
	c := resttest.OrdersConf(middleware.ModeInflight, 5*time.Second, "claim:userId", "json:orderId")
	c.Renew, c.Fence = true, true
	m, err := middleware.NewLockMiddlewareWithBackend(c, zklock.NewBackend(connect(t), testRoot(t)))
	if err != nil {
		t.Fatal(err)
	}
	g := resttest.NewGate()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
		[]rest.Route{{Method: http.MethodPost, Path: "/orders", Handler: g.Handle}}, rest.WithJwt(jwtSecret))
	auth := "Bearer " + resttest.Token(t, jwtSecret, 7)
	order := func() resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/orders", `{"orderId":"Z-1"}`, "Authorization", auth)
	}

	first := make(chan resttest.Result, 1)
	go func() { first <- order() }()
	fence := <-g.Inside
	const n = 5
	results := make(chan resttest.Result, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- order()
		}()
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		r := <-results
		if r.Status != http.StatusConflict {
			t.Fatalf("duplicate: %d %s, want 409", r.Status, r.Body)
		}
		var body map[string]any
		if err := json.Unmarshal([]byte(r.Body), &body); err != nil {
			t.Fatalf("409 body %q is not JSON: %v", r.Body, err)
		}
	}
	g.Release <- struct{}{}
	if r := <-first; r.Status != http.StatusOK {
		t.Fatalf("admitted request: %d %s", r.Status, r.Body)
	}
	if fence <= 0 {
		t.Fatalf("handler saw fence %d, want a token", fence)
	}

	again := make(chan resttest.Result, 1)
	go func() { again <- order() }()
	<-g.Inside
	g.Release <- struct{}{}
	if r := <-again; r.Status != http.StatusOK {
		t.Fatalf("request after the first completed: %d %s", r.Status, r.Body)
	}
}

const jwtSecret = "zerolock-test-secret"
