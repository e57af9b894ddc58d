package httpclient

import (
	"bytes"
	"io"
	"net/http"
)

// maxCopiedBody bounds the copy of a body that the request cannot make
// again (no GetBody): a larger body is sent once, and its request is not
// retried, rather than held in memory whole.
const maxCopiedBody = 8 << 20

// replayableBody sends a request's body again with each try: through the
// request's GetBody when it has one, else from a copy read once. A body
// that cannot be sent again (over maxCopiedBody, or not copied since no
// retry was allowed) is sent once.
type replayableBody struct {
	req  *http.Request
	data []byte    // the copy, when req has no GetBody
	once io.Reader // the body to send once, when it cannot be sent again
}

// newReplayableBody prepares req's body for the tries to come: several
// when retries, else one.
func newReplayableBody(req *http.Request, retries bool) (*replayableBody, error) {
	b := &replayableBody{req: req}
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil {
		return b, nil
	}
	if !retries {
		b.once = req.Body
		return b, nil
	}
	head, err := io.ReadAll(io.LimitReader(req.Body, maxCopiedBody+1))
	if err != nil {
		req.Body.Close()
		return nil, err
	}
	if len(head) > maxCopiedBody {
		b.once = io.MultiReader(bytes.NewReader(head), req.Body)
		return b, nil
	}
	req.Body.Close()
	b.data = head
	return b, nil
}

// again reports whether the body can be sent with another try.
func (b *replayableBody) again() bool {
	return b.once == nil
}

// set gives r, the attempt-th try's clone of the request, its body: the
// request's own on the first try when it has GetBody (which only later
// tries call) or is sent once, a fresh copy otherwise.
func (b *replayableBody) set(r *http.Request, attempt int) error {
	req := b.req
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		return nil
	case b.once != nil:
		r.Body = readCloser{Reader: b.once, Closer: req.Body}
		return nil
	case req.GetBody != nil && attempt == 1:
		r.Body = req.Body
		return nil
	case req.GetBody != nil:
		body, err := req.GetBody()
		if err != nil {
			return err
		}
		r.Body = body
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(b.data))
	r.ContentLength = int64(len(b.data))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b.data)), nil }
	return nil
}

// readCloser reads a body sent once and closes the request's own.
type readCloser struct {
	io.Reader
	io.Closer
}
