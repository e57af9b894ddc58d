package httpclient_test

import (
	"context"
	"fmt"
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
// refused again. So whatever the refusal's status (the rule's RejectCode:
// 425 and 429 are statuses the transport otherwise retries).
func TestDuplicateByMode(t *testing.T) {
	for _, tc := range []struct {
		mode   string
		status int
		tries  int
	}{
		{middleware.ModeReplay, http.StatusConflict, 2},
		{middleware.ModeInflight, http.StatusConflict, 1},
		{middleware.ModeWindow, http.StatusConflict, 1},
		{middleware.ModeReplay, http.StatusTooEarly, 2},
		{middleware.ModeInflight, http.StatusTooEarly, 1},
		{middleware.ModeInflight, http.StatusTooManyRequests, 1},
		{middleware.ModeWindow, http.StatusServiceUnavailable, 1},
	} {
		t.Run(fmt.Sprint(tc.mode, tc.status), func(t *testing.T) {
			rec, base := serve(t, func(try int, w http.ResponseWriter, _ *http.Request) {
				if try == 1 {
					// Replay: a delay past the deadline, which a poll does not
					// wait out; the others: a short one, which a retry would.
					w.Header().Set("Retry-After", map[bool]string{true: "30", false: "1"}[tc.mode == middleware.ModeReplay])
					w.Header().Set(middleware.ModeHeader, tc.mode)
					w.WriteHeader(tc.status)
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
