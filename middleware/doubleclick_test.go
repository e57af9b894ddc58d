package middleware_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
)

// TestDoubleClickByMode is the README's "which mode stops which
// duplicate": 11 real double clicks (the second 100-300 ms after the
// first) against a handler that answers at once, as goctl's stub does.
// inflight refuses only a request that overlaps the first, so nearly every
// second click runs too; window refuses every second click (409); replay
// with Wait answers both clicks with the one result. It logs the counts
// the README quotes.
func TestDoubleClickByMode(t *testing.T) {
	srv := redistest.Start(t)
	const pairs = 11
	for _, tc := range []struct {
		mode string
		wait time.Duration
	}{{middleware.ModeInflight, 0}, {middleware.ModeWindow, 0}, {middleware.ModeReplay, 2 * time.Second}} {
		t.Run(tc.mode, func(t *testing.T) {
			c := resttest.OrdersConf(tc.mode, 5*time.Second, "header:Authorization", "json:orderId")
			c.Wait = tc.wait
			m := mustMiddleware(t, c, newStore(srv))
			var runs atomic.Int64
			base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
				Method: http.MethodPost, Path: "/orders", Handler: func(w http.ResponseWriter, _ *http.Request) {
					fmt.Fprintf(w, `{"run":%d}`, runs.Add(1))
				}}})
			var twice, refused, sameAnswer int
			for i := range pairs {
				body := fmt.Sprintf(`{"orderId":"%s-%d"}`, tc.mode, i)
				before := runs.Load()
				var (
					wg    sync.WaitGroup
					first resttest.Result
				)
				wg.Add(1)
				go func() {
					defer wg.Done()
					first = resttest.Do(t, http.MethodPost, base+"/orders", body, "Authorization", "Bearer u")
				}()
				time.Sleep(time.Duration(100+20*i) * time.Millisecond) // the clicks' spacing, not synchronisation
				second := resttest.Do(t, http.MethodPost, base+"/orders", body, "Authorization", "Bearer u")
				wg.Wait()
				switch {
				case runs.Load()-before == 2:
					twice++
				case second.Status == http.StatusConflict:
					refused++
				case second.Status == http.StatusOK && second.Body == first.Body:
					sameAnswer++
				}
			}
			t.Logf("%s: of %d double clicks, %d ran twice, %d second clicks refused, %d answered with the first's result",
				tc.mode, pairs, twice, refused, sameAnswer)
			switch tc.mode {
			case middleware.ModeInflight:
				if twice == 0 {
					t.Fatalf("inflight: no double click ran twice; the README says inflight does not stop them")
				}
			case middleware.ModeWindow:
				if refused != pairs {
					t.Fatalf("window: %d of %d second clicks refused, want all", refused, pairs)
				}
			default:
				if sameAnswer != pairs {
					t.Fatalf("replay with Wait: %d of %d second clicks answered with the first's result, want all", sameAnswer, pairs)
				}
			}
		})
	}
}

// TestDoubleClickSlowHandlerReplayWait: what Wait adds to replay. Against
// a handler still working (300 ms) when the second click comes, replay
// without Wait refuses the second click
// (409, nothing to replay yet), and replay with Wait answers it with the
// first's result once that is in. Either way the handler runs once.
func TestDoubleClickSlowHandlerReplayWait(t *testing.T) {
	srv := redistest.Start(t)
	for _, wait := range []time.Duration{0, 2 * time.Second} {
		t.Run(fmt.Sprint("Wait=", wait), func(t *testing.T) {
			c := resttest.OrdersConf(middleware.ModeReplay, 5*time.Second, "header:Authorization", "json:orderId")
			c.Wait = wait
			m := mustMiddleware(t, c, newStore(srv))
			var runs atomic.Int64
			started := make(chan struct{}, 1)
			base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
				Method: http.MethodPost, Path: "/orders", Handler: func(w http.ResponseWriter, _ *http.Request) {
					n := runs.Add(1)
					started <- struct{}{}
					time.Sleep(300 * time.Millisecond) // the slow work
					fmt.Fprintf(w, `{"run":%d}`, n)
				}}})
			body := fmt.Sprintf(`{"orderId":"slow-%v"}`, wait)
			first := make(chan resttest.Result, 1)
			go func() {
				first <- resttest.Do(t, http.MethodPost, base+"/orders", body, "Authorization", "Bearer u")
			}()
			<-started
			second := resttest.Do(t, http.MethodPost, base+"/orders", body, "Authorization", "Bearer u")
			one := <-first
			if runs.Load() != 1 {
				t.Fatalf("the handler ran %d times, want once", runs.Load())
			}
			if wait == 0 && second.Status != http.StatusConflict {
				t.Fatalf("without Wait the second click got %d %q, want 409", second.Status, second.Body)
			}
			if wait > 0 && (second.Status != http.StatusOK || second.Body != one.Body) {
				t.Fatalf("with Wait the second click got %d %q, want the first's 200 %q", second.Status, second.Body, one.Body)
			}
		})
	}
}
