// Package errorx gives the demo's errors an HTTP status and a JSON body of
// one shape, {"code": ..., "message": ...}: the shape zerolock's middleware
// answers its refusals with (itself, without asking the error handler), so
// a client reads the demo's own errors and the middleware's alike.
//
//	return nil, errorx.New(http.StatusConflict, "item_busy", "item %s is busy", sku)
//
// main installs Handler with httpx.SetErrorHandlerCtx.
package errorx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/zeromicro/go-zero/core/logx"
)

// statusClientClosedRequest is the status go-zero's timeout handler
// answers a request whose client went away with.
const statusClientClosedRequest = 499

// CodeError is an error answered with Status and the body {"code": Code,
// "message": Message}.
type CodeError struct {
	// Status is the HTTP status of the answer.
	Status int
	// Code is a stable, machine-readable reason such as "item_busy".
	Code string
	// Message says what happened.
	Message string

	cause error
}

// New returns a CodeError with a formatted message.
func New(status int, code, format string, args ...any) *CodeError {
	return &CodeError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

// Internal returns a 500 CodeError with the code "internal" for a failure
// of the service itself, such as its store: not the client's fault, so not
// the 400 that an unrecognised error gets. Handler logs err, which the
// answer does not show; errors.Is and errors.As see it through Unwrap.
func Internal(err error) *CodeError {
	return &CodeError{Status: http.StatusInternalServerError, Code: "internal",
		Message: "internal error", cause: err}
}

// Error implements error.
func (e *CodeError) Error() string {
	if e.cause != nil {
		return e.Message + ": " + e.cause.Error()
	}
	return e.Message
}

// StatusCode returns the HTTP status, for error handlers that map errors
// by a StatusCode method.
func (e *CodeError) StatusCode() int {
	return e.Status
}

// Unwrap returns the error an Internal error wraps, or nil.
func (e *CodeError) Unwrap() error {
	return e.cause
}

// Body is the JSON body of every error answer.
type Body struct {
	// Code is a stable, machine-readable reason.
	Code string `json:"code"`
	// Message says what happened.
	Message string `json:"message"`
}

// statusCoder is any error that knows its HTTP status.
type statusCoder interface {
	StatusCode() int
}

// Handler is the service's httpx error handler (the lock middleware's
// refusals do not go through it). A *CodeError keeps its status and code;
// a request that outlived its route's timeout gets go-zero's 503 (499 when
// the client left) with the code "timeout" ("canceled"); any other error
// that has a StatusCode method keeps that status, with the status text as
// code ("not_found"); anything else, request parsing mostly, is a 400 with
// the code "bad_request".
func Handler(ctx context.Context, err error) (int, any) {
	var (
		codeErr *CodeError
		sc      statusCoder
	)
	switch {
	case errors.As(err, &codeErr):
		if codeErr.cause != nil {
			logx.WithContext(ctx).Errorf("%s: %v", codeErr.Code, codeErr.cause)
		}
		return codeErr.Status, Body{Code: codeErr.Code, Message: codeErr.Message}
	case errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable, Body{Code: "timeout", Message: "the request took too long"}
	case errors.Is(err, context.Canceled):
		return statusClientClosedRequest, Body{Code: "canceled", Message: "the client went away"}
	case errors.As(err, &sc):
		return sc.StatusCode(), Body{Code: codeOfStatus(sc.StatusCode()), Message: err.Error()}
	default:
		return http.StatusBadRequest, Body{Code: "bad_request", Message: err.Error()}
	}
}

// codeOfStatus turns a status's text into a code: 404 is "not_found".
func codeOfStatus(status int) string {
	text := http.StatusText(status)
	if text == "" {
		return "error"
	}
	return strings.ReplaceAll(strings.ToLower(text), " ", "_")
}
