package middleware

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/guard"
)

// exchange is one HTTP request as the shared flow (guard.Serve) drives it:
// it runs the handler and answers in HTTP's statuses and JSON bodies.
type exchange struct {
	m    *LockMiddleware
	ru   *rule
	next http.HandlerFunc
	w    http.ResponseWriter
	r    *http.Request

	status *statusRecorder // window mode: the status, to free a failed window
	held   *captureWriter  // replay mode: the response, stored before it is sent
}

var _ guard.Admitter = (*exchange)(nil)

// Run runs the handler. Held, it keeps the response until Deliver;
// guarded in window mode, it notes the status; otherwise the handler
// writes to the client's writer directly.
func (x *exchange) Run(ctx context.Context, how guard.Run) {
	r := x.r
	if ctx != r.Context() {
		r = r.WithContext(ctx)
	}
	var out http.ResponseWriter = x.w
	switch {
	case how == guard.Held:
		x.held = newCaptureWriter(x.w, x.ru.maxResponse)
		out = x.held
	case how == guard.Guarded && x.ru.Policy.Window:
		x.status = &statusRecorder{ResponseWriter: x.w}
		out = x.status
	}
	x.next(out, r)
}

// Failed is windowFailed for the status the handler answered.
func (x *exchange) Failed(ended error) bool {
	return x.status != nil && windowFailed(ended, x.status.status)
}

// Answer keeps the held response for retries when recordable says so: its
// status, replayable headers and body, or why it cannot be replayed (its
// body over MaxResponseBytes, a stream, headers over 64 KiB).
func (x *exchange) Answer(ended error) guard.Answer {
	cw := x.held
	status := cw.finalStatus()
	if !recordable(ended, status, x.ru.rejectCode) {
		return guard.Answer{}
	}
	why := cw.passedThrough
	if why == "" {
		payload, ok := storedResponse{status: status, header: replayableHeader(cw.sentHeader()), body: cw.body.Bytes()}.encode()
		if ok {
			return guard.Answer{Keep: true, Payload: payload}
		}
		why = "headers over 64 KiB"
	}
	fix := "a route that streams belongs in inflight or window mode"
	if why == whyTooLarge {
		fix = "raise MaxResponseBytes for this route"
	}
	return guard.Answer{Keep: true, Unreplayable: "the response was " + why + "; " + fix}
}

// Deliver writes out the held response.
func (x *exchange) Deliver() {
	if x.held != nil {
		x.held.writeOut()
	}
}

// Refuse answers with the refusal's status and JSON body, or the refusal
// handler's answer, and Retry-After where a retry may succeed later (and
// ModeHeader on a duplicate's refusal, the rate headers on a rate
// limit's). The rule's Message is the message of a duplicate's refusal
// and of limit and rate mode's.
func (x *exchange) Refuse(rf guard.Refusal) {
	var e *Error
	switch rf.Reason {
	case guard.Unavailable:
		msg := "the request cannot be checked for duplicates right now, try again"
		if x.ru.Policy.Quota > 0 {
			msg = "the request cannot be counted against its rate limit right now, try again"
		}
		e = newError(http.StatusServiceUnavailable, "lock_unavailable", ErrLockUnavailable, msg)
	case guard.Duplicate:
		msg := "the same request is already being handled, retry later"
		if x.ru.Policy.Window {
			// The first may have finished long ago: say what the window does.
			msg = fmt.Sprintf("the same request was already made; repeats are refused for %s, retry later", guard.DurationText(x.ru.Policy.Expire))
		}
		e = newError(x.ru.rejectCode, "duplicate_request", ErrDuplicateRequest, x.ru.messageOr(msg))
		x.w.Header().Set(ModeHeader, x.ru.Mode())
	case guard.OverLimit:
		e = limitExceeded(x.ru)
	case guard.RateLimited:
		e = rateLimited(x.ru)
		x.ru.setRateHeaders(x.w.Header(), rf.Rate)
		if rf.RetryAfter <= 0 {
			rf.RetryAfter = time.Second // Retry-After is at least 1
		}
	case guard.KeyReused:
		e = newError(http.StatusUnprocessableEntity, "idempotency_key_reused", ErrKeyReused,
			"the idempotency key was already used for a different request")
	case guard.NotKept:
		e = newError(x.ru.rejectCode, "duplicate_request", ErrDuplicateRequest,
			x.ru.messageOr("the first response to this request could not be kept for retries; retry later"))
	default: // guard.Unreadable
		// Not a 5xx: the client did nothing wrong, and the record may be a
		// later build's, during a rolling deploy.
		e = newError(x.ru.rejectCode, "stored_result_unreadable", ErrStoredResultUnreadable,
			"the first response to this request cannot be replayed; retry later")
	}
	e.RetryAfter = rf.RetryAfter
	x.m.respond(x.w, x.r, e)
}

// Admit sets the rate headers on a rate rule's admitted request when the
// rule sends them there (RateLimitHeaders), before the handler runs.
func (x *exchange) Admit(r zerolock.RateResult) {
	if x.ru.rateHeaders {
		x.ru.setRateHeaders(x.w.Header(), r)
	}
}

// Replay writes a stored response, or returns why it cannot be read.
func (x *exchange) Replay(payload []byte) error {
	sr, err := decodeStoredResponse(payload)
	if err != nil {
		return err
	}
	writeStored(x.w, sr)
	return nil
}
