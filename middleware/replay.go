package middleware

import (
	"net/http"
	"strconv"
)

// ReplayedHeader marks a response that replay mode served from the stored
// result of the first request instead of running the handler.
const ReplayedHeader = "Idempotent-Replayed"

// ModeHeader names, on the refusal of a duplicate, the mode of the rule
// that refused it, for clients to tell what a retry would get: in replay
// mode the first request's response, once it ends; in inflight mode a
// retry made after the first ended runs the handler again, and in window
// mode it is refused until the window ends. httpclient retries only the
// first.
const ModeHeader = "Zerolock-Mode"

// maxStoredPayload bounds a stored response's decoded size, whatever the
// rule's MaxResponseBytes is now: a corrupt or hostile compressed record
// cannot expand without limit.
const maxStoredPayload = 64 << 20

// recordable tells whether a response is kept for retries, given the
// request's context then (nil: still live). A 5xx is not: the retry runs
// again. A 2xx or 3xx is, even when the client left or go-zero's timeout
// answered 503 meanwhile: the handler completed and the work happened, so
// the client's retry gets the real result. A 4xx is kept while the request
// was live; once its context ended, a 4xx is most often the handler's
// report of that cancellation (go-zero answers a plain error with 400),
// not the answer to the request, so it is not kept and the retry runs.
// An answer that says "not done yet, retry later" is never kept, or every
// retry would get it for Retain and the work would never run: the rule's
// own RejectCode (rejectCode), 425 Too Early (dtm's "still running") and
// 429 Too Many Requests.
func recordable(ended error, status, rejectCode int) bool {
	switch {
	case status >= http.StatusInternalServerError:
		return false
	case status == rejectCode || status == http.StatusTooEarly || status == http.StatusTooManyRequests:
		return false
	case status >= http.StatusBadRequest:
		return ended == nil
	}
	return true
}

// writeStored replays a stored response: its status, its replayable
// headers (again filtered, whatever the store held), Idempotent-Replayed
// and its body.
func writeStored(w http.ResponseWriter, sr storedResponse) {
	h := w.Header()
	copyHeader(h, replayableHeader(sr.header))
	h.Set(ReplayedHeader, "true")
	if len(sr.body) > 0 && bodyAllowed(sr.status) {
		h.Set("Content-Length", strconv.Itoa(len(sr.body)))
	}
	w.WriteHeader(sr.status)
	if len(sr.body) > 0 {
		_, _ = w.Write(sr.body)
	}
}
