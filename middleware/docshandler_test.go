package middleware_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/internal/testing/zeromicrox/errors"
	xhttp "github.com/zerolock/zerolock/internal/testing/zeromicrox/http"
)

// installDocsErrorHandler installs errorHandler, the error handler of
// go-zero's docs (example_refusal_test.go), with httpx.SetErrorHandler, as
// the docs do, until the test ends. The handler is process-wide: a test
// that installs it must not run in parallel.
func installDocsErrorHandler(t *testing.T) {
	t.Helper()
	httpx.SetErrorHandler(errorHandler)
	t.Cleanup(func() { httpx.SetErrorHandlerCtx(nil) })
}

// TestDocsErrorHandler: the handler answers a *CodeMsg 200 with
// {code, msg} and anything else with an empty 500, as the docs show.
func TestDocsErrorHandler(t *testing.T) {
	if status, body := errorHandler(errors.New(400, "dummy error")); status != http.StatusOK ||
		body != (xhttp.BaseResponse[struct{}]{Code: 400, Msg: "dummy error"}) {
		t.Fatalf("a CodeMsg: %d %+v, want 200 {400 dummy error}", status, body)
	}
	if status, body := errorHandler(context.Canceled); status != http.StatusInternalServerError || body != nil {
		t.Fatalf("another error: %d %+v, want a bare 500", status, body)
	}
}
