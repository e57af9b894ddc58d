package middleware

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	"github.com/zeromicro/go-zero/core/jsonx"
	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/rest/httpx"
)

// SetRefusalHandler makes h shape every answer the middleware gives
// instead of running the handler: the refusals (409 or RejectCode, 422,
// 429, the 503 of a store that is down) and the 400s and 413 of a request
// whose key cannot be read, but not a replayed response, which is the
// first response as it was. h receives the *Error (errors.Is tells its
// reason, one of the ErrX sentinels) and returns the status and the body,
// as a handler set with httpx.SetErrorHandlerCtx does: a nil body writes
// the status alone, an error body its text, any other body its JSON. A
// service whose clients read {code, msg} with HTTP 200, as in go-zero's
// x/http, says so here. Retry-After is set before h runs.
//
// Without a refusal handler the answer is e.Status with the JSON body
// {"code": e.Code, "message": e.Message}, written directly: the error
// handler a service sets with httpx.SetErrorHandler or SetErrorHandlerCtx
// is not asked, since the one go-zero's docs show answers every error it
// does not know with an empty 500, which go-zero's breaker counts as a
// failure of the route.
//
// A refusal never becomes a 5xx: a status of 500 or more from h, for an
// answer that is not itself the 503 of a store that is down, is replaced
// with e.Status, and so is a status outside 200 to 599; a body that
// cannot be marshalled is replaced with the default one, and so is the
// answer of an h that panics. h gets a copy of the *Error: changing it
// changes nothing of the answer but through h's results. That is logged,
// once per middleware, as a bug of h. Call SetRefusalHandler before the
// server starts; nil restores the default answer.
func (m *LockMiddleware) SetRefusalHandler(h func(ctx context.Context, e *Error) (status int, body any)) {
	if h == nil {
		m.refusals.Store(nil)
		return
	}
	m.refusals.Store(&h)
}

// respond answers a request the middleware does not run: Retry-After for
// a refusal a retry may get past, then the refusal handler's answer, or
// the default one.
func (m *LockMiddleware) respond(w http.ResponseWriter, r *http.Request, e *Error) {
	if e.RetryAfter > 0 {
		secs := int64(math.Ceil(e.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	ctx := r.Context()
	h := m.refusals.Load()
	if h == nil {
		httpx.WriteJsonCtx(ctx, w, e.Status, defaultBody(e))
		return
	}
	// h gets a copy: what it changes in its *Error cannot move the clamp.
	own := *e
	status, body, ok := m.callRefusalHandler(ctx, *h, &own)
	if !ok {
		httpx.WriteJsonCtx(ctx, w, e.Status, defaultBody(e))
		return
	}
	if !allowedStatus(status, e) {
		m.badRefusal(ctx, "answered status %d to a refusal of %d (%s), which must not become a 5xx: "+
			"answered %d instead; return a status below 500 (200 for a {code, msg} convention)", status, e.Status, e.Code, e.Status)
		status = e.Status
	}
	switch v := body.(type) {
	case nil:
		w.WriteHeader(status)
	case error:
		http.Error(w, v.Error(), status)
	default:
		raw, err := jsonx.Marshal(v)
		if err != nil {
			m.badRefusal(ctx, "returned a body for %s that cannot be marshalled (%v): answered the default body instead", e.Code, err)
			httpx.WriteJsonCtx(ctx, w, status, defaultBody(e))
			return
		}
		httpx.WriteJsonCtx(ctx, w, status, json.RawMessage(raw))
	}
}

// callRefusalHandler runs h; ok is false when h panicked (logged, once),
// and the caller answers the default instead of go-zero's recovery 500.
func (m *LockMiddleware) callRefusalHandler(ctx context.Context, h func(context.Context, *Error) (int, any),
	e *Error) (status int, body any, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			m.badRefusal(ctx, "panicked on %s (%v): answered the default instead", e.Code, p)
			ok = false
		}
	}()
	status, body = h(ctx, e)
	return status, body, true
}

// allowedStatus tells whether a refusal handler may answer e with status:
// a real HTTP status, and a 5xx only for an answer that is one (the 503 of
// a store that is down).
func allowedStatus(status int, e *Error) bool {
	switch {
	case status < http.StatusOK || status > 599:
		return false
	case status >= http.StatusInternalServerError:
		return e.Status >= http.StatusInternalServerError
	}
	return true
}

// badRefusal logs a refusal handler's mistake, once per middleware.
func (m *LockMiddleware) badRefusal(ctx context.Context, format string, args ...any) {
	if m.refusalWarned.CompareAndSwap(false, true) {
		logx.WithContext(ctx).Errorf("zerolock: the refusal handler "+format+" (logged once)", args...)
	}
}

// defaultBody is the JSON body of an answer without a refusal handler.
func defaultBody(e *Error) errorBody {
	return errorBody{Code: e.Code, Message: e.Message}
}
