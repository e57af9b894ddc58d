// Package errorx gives the demo's errors an HTTP status and a JSON body.
package errorx

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// CodeError is an error answered with Status and a JSON body.
type CodeError struct {
	Status  int
	Message string
}

// New returns a CodeError with a formatted message.
func New(status int, format string, args ...any) *CodeError {
	return &CodeError{Status: status, Message: fmt.Sprintf(format, args...)}
}

// Error implements error.
func (e *CodeError) Error() string {
	return e.Message
}

// statusCoder is any error that knows its HTTP status, such as the
// rejections of zerolock's middleware.
type statusCoder interface {
	StatusCode() int
}

// StatusCode implements statusCoder.
func (e *CodeError) StatusCode() int {
	return e.Status
}

// Body is the JSON body of every error answer.
type Body struct {
	Message string `json:"message"`
}

// Handler is the service's httpx error handler: errors that carry a status
// keep it, anything else (request parsing, mostly) is a 400; every error is
// answered with {"message": ...}.
func Handler(_ context.Context, err error) (int, any) {
	var sc statusCoder
	if errors.As(err, &sc) {
		return sc.StatusCode(), Body{Message: err.Error()}
	}
	return http.StatusBadRequest, Body{Message: err.Error()}
}
