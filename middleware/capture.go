package middleware

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strings"
)

// captureWriter holds a replay-mode handler's response instead of writing
// it, so that it is stored before the client can see it and retry. A
// response that cannot be kept (over the limit, flushed, hijacked,
// switching protocols) goes through to the client from that moment on,
// and passedThrough says why. Unwrap lets http.ResponseController reach
// the original writer's deadlines; its Flush and Hijack come here first.
type captureWriter struct {
	w      http.ResponseWriter
	header http.Header // what the handler sets
	sent   http.Header // header as of WriteHeader: what net/http would send
	status int
	body   bytes.Buffer
	limit  int64

	passedThrough string // "" while held, else why the response was not
}

// whyTooLarge is passedThrough for a body over the limit.
const whyTooLarge = "over MaxResponseBytes"

func newCaptureWriter(w http.ResponseWriter, limit int64) *captureWriter {
	return &captureWriter{w: w, header: make(http.Header), limit: limit}
}

// Header returns the handler's header map; once the response goes
// through, the original writer's.
func (c *captureWriter) Header() http.Header {
	if c.passedThrough != "" {
		return c.w.Header()
	}
	return c.header
}

// WriteHeader records the status; informational ones (1xx) go out at
// once, as net/http sends them, and 101 Switching Protocols gives the
// connection to another protocol: that response cannot be replayed.
func (c *captureWriter) WriteHeader(code int) {
	switch {
	case c.passedThrough != "":
		c.w.WriteHeader(code)
		return
	case code == http.StatusSwitchingProtocols:
		c.passThrough("switching protocols")
		c.w.WriteHeader(code)
		return
	case code >= 100 && code < 200:
		copyHeader(c.w.Header(), c.header)
		c.w.WriteHeader(code)
		return
	case c.status != 0:
		return // superfluous, as net/http ignores it
	}
	c.status = code
	c.sent = c.header.Clone()
}

// Write holds p, or writes it through once the body is over the limit.
func (c *captureWriter) Write(p []byte) (int, error) {
	if c.passedThrough != "" {
		return c.w.Write(p)
	}
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	if !bodyAllowed(c.status) {
		return 0, http.ErrBodyNotAllowed
	}
	if int64(c.body.Len())+int64(len(p)) > c.limit {
		c.passThrough(whyTooLarge)
		return c.w.Write(p)
	}
	return c.body.Write(p)
}

// Flush streams: what was held goes out, and the rest follows as written.
func (c *captureWriter) Flush() {
	_ = c.FlushError()
}

// FlushError is Flush for http.ResponseController, reporting the original
// writer's error.
func (c *captureWriter) FlushError() error {
	if c.passedThrough == "" {
		if c.status == 0 {
			c.WriteHeader(http.StatusOK) // what net/http's Flush sends
		}
		c.passThrough("flushed (streamed)")
	}
	return http.NewResponseController(c.w).Flush()
}

// Hijack hands the connection to the handler, which answers on its own.
func (c *captureWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(c.w).Hijack()
	if err == nil && c.passedThrough == "" {
		c.passedThrough = "hijacked"
	}
	return conn, rw, err
}

// Unwrap returns the original writer, for http.ResponseController.
func (c *captureWriter) Unwrap() http.ResponseWriter {
	return c.w
}

// finalStatus is the status the client gets: 200 when the handler wrote
// nothing, as net/http sends.
func (c *captureWriter) finalStatus() int {
	if c.status == 0 {
		return http.StatusOK
	}
	return c.status
}

// sentHeader is the header net/http would have sent for the handler.
func (c *captureWriter) sentHeader() http.Header {
	if c.sent != nil {
		return c.sent
	}
	return c.header
}

// passThrough writes out what is held and sends the rest as written.
func (c *captureWriter) passThrough(why string) {
	c.writeOut()
	c.passedThrough = why
	c.body = bytes.Buffer{}
}

// writeOut writes the held response to the original writer: the header as
// of WriteHeader, the status and the body, then the trailers the handler
// set, which net/http sends after the body. A response already passed
// through is not written again.
func (c *captureWriter) writeOut() {
	if c.passedThrough != "" {
		return
	}
	sent := c.sentHeader()
	dst := c.w.Header()
	copyHeader(dst, sent)
	if c.status != 0 || c.body.Len() > 0 {
		c.w.WriteHeader(c.finalStatus())
	}
	if c.body.Len() > 0 {
		_, _ = c.w.Write(c.body.Bytes())
	}
	declared := make(map[string]bool)
	for _, v := range sent.Values("Trailer") {
		for _, name := range strings.Split(v, ",") {
			declared[http.CanonicalHeaderKey(strings.TrimSpace(name))] = true
		}
	}
	for name, values := range c.header {
		if declared[name] || strings.HasPrefix(name, http.TrailerPrefix) {
			dst[name] = values
		}
	}
}

func copyHeader(dst, src http.Header) {
	for name, values := range src {
		dst[name] = values
	}
}

// bodyAllowed is net/http's rule: 1xx, 204 and 304 answers have no body.
func bodyAllowed(status int) bool {
	return !(status >= 100 && status < 200) && status != http.StatusNoContent && status != http.StatusNotModified
}
