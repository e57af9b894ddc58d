package middleware

import (
	"errors"
	"net/http"
	"time"
)

var (
	// ErrBadConfig is wrapped by every configuration error that
	// NewLockMiddleware and ForRule return.
	ErrBadConfig = errors.New("middleware: bad lock configuration")

	// ErrDuplicateRequest is the reason of a refusal while the same request
	// is being handled (RejectCode, 409 by default).
	ErrDuplicateRequest = errors.New("middleware: the same request is already being handled")
	// ErrMissingField is the reason of a 400 for a key the request lacks.
	ErrMissingField = errors.New("middleware: missing key field")
	// ErrAmbiguousField is the reason of a 400 for a key given more than
	// once (a repeated query parameter, form field or header).
	ErrAmbiguousField = errors.New("middleware: key field given more than once")
	// ErrMalformedBody is the reason of a 400 for a body that cannot be
	// parsed as its key needs (invalid JSON, a broken form).
	ErrMalformedBody = errors.New("middleware: malformed request body")
	// ErrBodyTooLarge is the reason of a 413 for a body over MaxBodyBytes.
	ErrBodyTooLarge = errors.New("middleware: request body too large")
	// ErrLockUnavailable is the reason of a 503 when Redis cannot be
	// reached and FailOpen is off.
	ErrLockUnavailable = errors.New("middleware: lock store unavailable")
	// ErrKeyReused is the reason of a 422 in replay mode: the key holds the
	// result of a request with another fingerprint (another body, query or
	// path), which is left untouched.
	ErrKeyReused = errors.New("middleware: the idempotency key was reused with a different request")
	// ErrRateLimited is the reason of a 429 in rate mode: the request's
	// key was admitted its rule's Quota times within the last Period. The
	// answer carries Retry-After (whole seconds until a request would be
	// admitted, rounded up) and the RateLimit-Policy and RateLimit headers.
	ErrRateLimited = errors.New("middleware: rate limit exceeded")
	// ErrStoredResultUnreadable is the reason of a refusal with RejectCode
	// (409 by default) and Retry-After in replay mode: the key holds a value
	// that is not a result this version can replay (corrupt, foreign, or of
	// a later format, during a rolling deploy). Not a 5xx: the client did
	// nothing wrong. It is logged, and the value is kept until its Retain
	// passes.
	ErrStoredResultUnreadable = errors.New("middleware: the stored result cannot be read")
)

// Error is what the middleware answers a request with instead of running
// its handler: by default Status with the JSON body {"code": Code,
// "message": Message}, written directly and never through the error
// handler of httpx.SetErrorHandler, which could turn it into a 5xx. A
// handler set with LockMiddleware.SetRefusalHandler receives it and shapes
// the answer. errors.Is(err, ErrX) tells the reason.
type Error struct {
	// Status is the HTTP status of the answer.
	Status int
	// Code is a stable, machine-readable reason such as "duplicate_request".
	Code string
	// Message says what happened, naming the key spec but never its value.
	Message string
	// RetryAfter is when a retry may succeed: the lock's remaining time,
	// for duplicates; the time until a request would be admitted, for a
	// rate limit.
	RetryAfter time.Duration

	reason error
}

// Error implements error.
func (e *Error) Error() string {
	return e.Message
}

// StatusCode returns the HTTP status, for error handlers that map errors
// by a StatusCode method.
func (e *Error) StatusCode() int {
	return e.Status
}

// Unwrap returns the reason, one of the ErrX sentinels.
func (e *Error) Unwrap() error {
	return e.reason
}

// errorBody is the JSON body of an answer without a refusal handler.
type errorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func newError(status int, code string, reason error, message string) *Error {
	return &Error{Status: status, Code: code, Message: message, reason: reason}
}

func missingField(spec string) *Error {
	return newError(http.StatusBadRequest, "missing_field", ErrMissingField,
		"missing required field "+spec)
}

func ambiguousField(spec string) *Error {
	return newError(http.StatusBadRequest, "ambiguous_field", ErrAmbiguousField,
		"field "+spec+" is given more than once")
}

func malformedBody(spec, why string) *Error {
	return newError(http.StatusBadRequest, "malformed_body", ErrMalformedBody,
		"cannot read "+spec+": "+why)
}

func bodyTooLarge() *Error {
	return newError(http.StatusRequestEntityTooLarge, "body_too_large", ErrBodyTooLarge,
		"request body too large")
}
