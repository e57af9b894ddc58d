package httpclient_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/zerolock/zerolock/httpclient"
	"github.com/zerolock/zerolock/middleware"
)

// TestDuplicateByMode: a 409 from zerolock's middleware names its rule's
// mode. From a replay rule it is retried after the back-off, not its
// Retry-After (the first request's remaining hold), since the retry gets
// the first response as soon as it is in; from an inflight or window rule
// it is the answer, since a retry would run the request again, or be
// refused again.
func TestDuplicateByMode(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		tries int
	}{{middleware.ModeReplay, 2}, {middleware.ModeInflight, 1}, {middleware.ModeWindow, 1}} {
		t.Run(tc.mode, func(t *testing.T) {
			rec, base := serve(t, func(try int, w http.ResponseWriter, _ *http.Request) {
				if try == 1 {
					w.Header().Set("Retry-After", "30")
					w.Header().Set(middleware.ModeHeader, tc.mode)
					w.WriteHeader(http.StatusConflict)
					return
				}
				w.WriteHeader(http.StatusCreated)
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			resp, err := post(t, client(t, httpclient.Conf{}), ctx, base+"/pay/1", "x")
			if err != nil {
				t.Fatal(err)
			}
			if keys, _ := rec.tries(); len(keys) != tc.tries {
				t.Fatalf("%d tries (answer %d), want %d", len(keys), resp.StatusCode, tc.tries)
			}
		})
	}
}

// TestModeHeaderIsTheMiddlewares: the header the transport reads is the one
// the middleware writes.
func TestModeHeaderIsTheMiddlewares(t *testing.T) {
	if httpclient.ModeHeaderForTest != middleware.ModeHeader {
		t.Fatalf("the transport reads %s, the middleware writes %s", httpclient.ModeHeaderForTest, middleware.ModeHeader)
	}
}
