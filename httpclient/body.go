package httpclient

import (
	"bytes"
	"io"
	"net/http"
)

// replayableBody sends a request's body again with each try: through the
// request's GetBody when it has one, else from a copy read once.
type replayableBody struct {
	req  *http.Request
	data []byte // the copy, when req has no GetBody
}

// newReplayableBody prepares req's body for several tries; a request
// without a body needs nothing.
func newReplayableBody(req *http.Request) (*replayableBody, error) {
	b := &replayableBody{req: req}
	if req.Body == nil || req.Body == http.NoBody || req.GetBody != nil {
		return b, nil
	}
	defer req.Body.Close()
	data, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	b.data = data
	return b, nil
}

// set gives r, the attempt-th try's clone of the request, its body: the
// request's own on the first try when it has GetBody (which only later
// tries call), a fresh copy otherwise.
func (b *replayableBody) set(r *http.Request, attempt int) error {
	req := b.req
	switch {
	case req.Body == nil || req.Body == http.NoBody:
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
