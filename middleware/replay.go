package middleware

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/internal/ctxdone"
	"github.com/zerolock/zerolock/internal/guard"
	"github.com/zerolock/zerolock/internal/keyspec"
	"github.com/zerolock/zerolock/internal/replay"
)

// ReplayedHeader marks a response that replay mode served from the stored
// result of the first request instead of running the handler.
const ReplayedHeader = "Idempotent-Replayed"

// maxStoredPayload bounds a stored response's decoded size, whatever the
// rule's MaxResponseBytes is now: a corrupt or hostile compressed record
// cannot expand without limit.
const maxStoredPayload = 64 << 20

// runAndRecord runs the handler of a request that took its replay-mode
// lock, holding its response (captureWriter); stores the response in
// place of the lock before the client sees it, so that a retry sent the
// moment it arrives is replayed; then writes it out. What is stored is
// decided by recordable. A store that fails, or finds the lock lost (the
// handler outlived Expire), is logged by the lease, and the client still
// gets the handler's response.
func (m *LockMiddleware) runAndRecord(ru *rule, key string, fp [replay.FingerprintSize]byte, res guard.Result,
	next http.HandlerFunc, w http.ResponseWriter, r *http.Request,
) {
	reqCtx := r.Context()
	cw := newCaptureWriter(w, ru.maxResponse)
	returned := false
	defer func() {
		if !returned {
			// A panic: nothing is stored, and the retry runs again.
			res.Lease.End(reqCtx, false)
		}
	}()
	if res.Ctx != reqCtx {
		r = r.WithContext(res.Ctx)
	}
	next(cw, r)
	returned = true

	status := cw.finalStatus()
	// The handler's context: with Renew it also ends when the watch gives up,
	// after which a 4xx is the handler's report of that, not an answer.
	if !recordable(ctxdone.Err(res.Ctx), status) {
		res.Lease.End(reqCtx, false) // before the client sees the answer, to retry at once
		cw.writeOut()
		return
	}
	rec := replay.Record{Kind: kindHTTP, Fingerprint: fp}
	why := cw.passedThrough
	if why == "" {
		payload, ok := storedResponse{status: status, header: replayableHeader(cw.sentHeader()), body: cw.body.Bytes()}.encode()
		if ok {
			rec.Payload = payload
		} else {
			why = "headers over 64 KiB"
		}
	}
	if why != "" {
		rec.Unreplayable = true
		fix := "a route that streams belongs in inflight or window mode"
		if why == whyTooLarge {
			fix = "raise MaxResponseBytes for this route"
		}
		logx.WithContext(reqCtx).Errorf("zerolock: the response of %s (key …%s) was %s, so it is not kept: "+
			"its retries are refused for Retain (%v); %s", ru.label, keyspec.Digest(key), why, ru.policy.Retain, fix)
	}
	res.Lease.Record(reqCtx, replay.Encode(rec))
	cw.writeOut()
}

// recordable tells whether a response is kept for retries, given the
// request's context then (nil: still live). A 5xx is not: the retry runs
// again. A 2xx or 3xx is, even when the client left or go-zero's timeout
// answered 503 meanwhile: the handler completed and the work happened, so
// the client's retry gets the real result. A 4xx is kept while the request
// was live; once its context ended, a 4xx is most often the handler's
// report of that cancellation (go-zero answers a plain error with 400),
// not the answer to the request, so it is not kept and the retry runs.
func recordable(ended error, status int) bool {
	switch {
	case status >= http.StatusInternalServerError:
		return false
	case status >= http.StatusBadRequest:
		return ended == nil
	}
	return true
}

// serveStored answers a request whose key holds a stored result: the
// response itself when the fingerprints match, 422 when the key was used
// for another request, the reject code when the first response could not
// be kept or the stored value cannot be read.
func (m *LockMiddleware) serveStored(ru *rule, key string, fp [replay.FingerprintSize]byte, stored []byte,
	w http.ResponseWriter, r *http.Request,
) {
	// A fixed bound, not this rule's MaxResponseBytes: a record kept under a
	// larger setting (before a deploy lowered it) still reads.
	rec, err := replay.Decode(stored, maxStoredPayload)
	if err == nil && rec.Kind != kindHTTP {
		err = errors.New("a stored result of another transport")
	}
	var sr storedResponse
	if err == nil && !rec.Unreplayable && rec.Fingerprint == fp {
		sr, err = decodeStoredResponse(rec.Payload)
	}
	switch {
	case err != nil:
		// Not a 5xx: the client did nothing wrong, and the record may be a
		// later build's, during a rolling deploy. Refused as a duplicate,
		// with the time the record has left.
		m.guard.Count(ru.label, guard.StoreError)
		logx.WithContext(r.Context()).Errorf("zerolock: the stored result of %s (key …%s) cannot be read, "+
			"so its retries are refused until it expires: %v", ru.label, keyspec.Digest(key), err)
		e := newError(m.conf.RejectCode, "stored_result_unreadable", ErrStoredResultUnreadable,
			"the first response to this request cannot be replayed; retry later")
		e.RetryAfter = m.guard.StoredRetryAfter(r.Context(), ru.label, key, ru.policy)
		respond(w, r, e)
	case rec.Fingerprint != fp:
		m.guard.Count(ru.label, guard.Mismatch)
		respond(w, r, newError(http.StatusUnprocessableEntity, "idempotency_key_reused", ErrKeyReused,
			"the idempotency key was already used for a different request"))
	case rec.Unreplayable:
		m.guard.Count(ru.label, guard.Rejected)
		e := newError(m.conf.RejectCode, "duplicate_request", ErrDuplicateRequest,
			"the first response to this request could not be kept for retries; retry later")
		e.RetryAfter = m.guard.StoredRetryAfter(r.Context(), ru.label, key, ru.policy)
		respond(w, r, e)
	default:
		m.guard.Count(ru.label, guard.Replayed)
		writeStored(w, sr)
	}
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
