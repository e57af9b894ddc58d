package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/zeromicro/go-zero/rest/httpx"
)

// codeMsg is github.com/zeromicro/x/errors.CodeMsg, the error go-zero's
// "Error processing" page (go-zero.dev/docs/tutorials/http/server/error)
// answers in its {code, msg} convention, written out here so that the
// tests do not depend on zeromicro/x.
type codeMsg struct {
	Code int
	Msg  string
}

func (c *codeMsg) Error() string {
	return fmt.Sprintf("code: %d, msg: %s", c.Code, c.Msg)
}

// baseResponse is github.com/zeromicro/x/http.BaseResponse, the body of
// that convention.
type baseResponse[T any] struct {
	Code int    `json:"code"`
	Msg  string `json:"msg"`
	Data T      `json:"data,omitempty"`
}

// docsErrorHandler is the error handler of go-zero's "Error processing"
// page, as it is written there: a *CodeMsg is answered 200 with its code
// and message, and every other error with a bare 500.
func docsErrorHandler(err error) (int, any) {
	switch e := err.(type) {
	case *codeMsg:
		return http.StatusOK, baseResponse[struct{}]{
			Code: e.Code,
			Msg:  e.Msg,
		}
	default:
		return http.StatusInternalServerError, nil
	}
}

// installDocsErrorHandler installs docsErrorHandler with
// httpx.SetErrorHandler, as the docs do, until the test ends. The handler
// is process-wide: a test that installs it must not run in parallel.
func installDocsErrorHandler(t *testing.T) {
	t.Helper()
	httpx.SetErrorHandler(docsErrorHandler)
	t.Cleanup(func() { httpx.SetErrorHandlerCtx(nil) })
}

// TestDocsErrorHandler: the handler answers a *codeMsg 200 with
// {code, msg} and anything else with an empty 500, as the docs show.
func TestDocsErrorHandler(t *testing.T) {
	if status, body := docsErrorHandler(&codeMsg{Code: 400, Msg: "dummy error"}); status != http.StatusOK ||
		body != (baseResponse[struct{}]{Code: 400, Msg: "dummy error"}) {
		t.Fatalf("a CodeMsg: %d %+v, want 200 {400 dummy error}", status, body)
	}
	if status, body := docsErrorHandler(context.Canceled); status != http.StatusInternalServerError || body != nil {
		t.Fatalf("another error: %d %+v, want a bare 500", status, body)
	}
}
