package middleware_test

// The README's error-handler snippet (the handler of go-zero's docs, and
// the refusal handler that answers in the same convention) is lines of
// this file: the root package's TestReadmeGoBlocks fails when a README line
// is found in no compiled source it lists, this file among them.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest/httpx"

	// Stand-ins for github.com/zeromicro/x/errors and x/http, which the
	// module does not depend on: the same names, fields and JSON.
	"github.com/zerolock/zerolock/internal/testing/zeromicrox/errors"
	xhttp "github.com/zerolock/zerolock/internal/testing/zeromicrox/http"
	"github.com/zerolock/zerolock/middleware"
)

// errorHandler is the error handler of go-zero's "Error processing" page
// (go-zero.dev/docs/tutorials/http/server/error), as written there: a
// *errors.CodeMsg is answered 200 with {code, msg}, and every other error
// with an empty 500.
func errorHandler(err error) (int, any) {
	switch e := err.(type) {
	case *errors.CodeMsg:
		return http.StatusOK, xhttp.BaseResponse[struct{}]{
			Code: e.Code,
			Msg:  e.Msg,
		}
	default:
		return http.StatusInternalServerError, nil
	}
}

// codeOf is a service's numeric business code for each answer of the
// middleware (errors.Is(e, middleware.ErrDuplicateRequest) tells the same).
func codeOf(e *middleware.Error) int {
	switch e.Code {
	case "duplicate_request":
		return 10409
	case "missing_field", "ambiguous_field", "malformed_body":
		return 10400
	default:
		return 10500
	}
}

// A service that answers {code, msg} with HTTP 200, as go-zero's docs
// teach, answers the middleware's refusals in that convention too: its
// error handler is not asked (the docs' would answer them with an empty
// 500), its refusal handler is. The errors and xhttp packages here stand
// for github.com/zeromicro/x/errors and github.com/zeromicro/x/http, whose
// names and JSON they copy: a service imports those.
func ExampleLockMiddleware_SetRefusalHandler() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	httpx.SetErrorHandler(errorHandler)
	defer httpx.SetErrorHandlerCtx(nil)

	store := redis.MustNewRedis(redis.RedisConf{Host: mr.Addr(), Type: redis.NodeType, DisableIdentity: true})
	lock := middleware.MustNewLockMiddleware(middleware.LockConf{Mode: middleware.ModeWindow, Message: "请勿重复提交"}, store)
	lock.SetRefusalHandler(func(ctx context.Context, e *middleware.Error) (int, any) {
		return http.StatusOK, xhttp.BaseResponse[struct{}]{
			Code: codeOf(e),
			Msg:  e.Message,
		}
	})

	orders, err := lock.ForRule(middleware.LockRule{Method: http.MethodPost, Path: "/orders", Keys: []string{"header:X-User-Id", "json:orderId"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	handler := orders(createOrder)
	order := func(body string) {
		r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-User-Id", "alice")
		w := httptest.NewRecorder()
		handler(w, r)
		fmt.Println(w.Code, w.Body.String())
	}
	order(`{"orderId":"o-1"}`)
	order(`{"orderId":"o-1"}`) // a double click
	order(`{}`)
	// Output:
	// 200 {"status":"created"}
	// 200 {"code":10409,"msg":"请勿重复提交","data":{}}
	// 200 {"code":10400,"msg":"missing required field json:orderId","data":{}}
}
