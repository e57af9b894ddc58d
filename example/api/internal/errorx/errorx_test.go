package errorx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/zeromicro/go-zero/core/logx"
)

func TestMain(m *testing.M) {
	logx.Disable() // Handler logs the Internal case's error
	os.Exit(m.Run())
}

// notFound is an error of another package that knows its status.
type notFound struct{}

func (notFound) Error() string   { return "no such thing" }
func (notFound) StatusCode() int { return http.StatusNotFound }

// TestHandler: every error is answered {"code", "message"}, with the
// demo's own codes (wrapped too), go-zero's
// statuses for a request that timed out or whose client left, and 400
// "bad_request" for what is left (request parsing).
func TestHandler(t *testing.T) {
	storeDown := errors.New("dial tcp: connection refused")
	for _, tc := range []struct {
		name   string
		err    error
		status int
		body   Body
	}{
		{"wrapped", fmt.Errorf("outer: %w", New(http.StatusConflict, "item_busy", "busy")),
			http.StatusConflict, Body{"item_busy", "busy"}},
		{"demo", New(http.StatusConflict, "item_busy", "item %s is busy", "sku-1"),
			http.StatusConflict, Body{"item_busy", "item sku-1 is busy"}},
		{"internal", Internal(storeDown),
			http.StatusInternalServerError, Body{"internal", "internal error"}},
		{"timeout", context.DeadlineExceeded,
			http.StatusServiceUnavailable, Body{"timeout", "the request took too long"}},
		{"client left", context.Canceled,
			statusClientClosedRequest, Body{"canceled", "the client went away"}},
		{"other status", notFound{},
			http.StatusNotFound, Body{"not_found", "no such thing"}},
		{"parse", errors.New(`field "count" is not set`),
			http.StatusBadRequest, Body{"bad_request", `field "count" is not set`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := Handler(context.Background(), tc.err)
			if status != tc.status || body != tc.body {
				t.Fatalf("Handler(%v) = %d %+v, want %d %+v", tc.err, status, body, tc.status, tc.body)
			}
		})
	}
	if !errors.Is(Internal(storeDown), storeDown) {
		t.Fatal("Internal does not wrap its error")
	}
}
