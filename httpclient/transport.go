package httpclient

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/search"

	"github.com/zerolock/zerolock/internal/guard"
)

// KeyHeader is the header that carries a request's idempotency key, as
// the IETF draft and zerolock's replay rules (header:Idempotency-Key)
// name it.
const KeyHeader = "Idempotency-Key"

// NewTransport returns a RoundTripper that sends the requests c's routes
// match through next (http.DefaultTransport when nil) with an
// Idempotency-Key, and retries them with the same key:
//   - on an error of the connection (no answer arrived), and when
//     AttemptTimeout cut a try;
//   - on 409, 425, 429 and 503 answers that carry Retry-After (a duplicate
//     still running, whose retry gets the replayed result; a rate or
//     concurrency limit; an overloaded server), after that delay, unless
//     it is over a minute: such an answer is returned.
//
// Never on other answers, never more than MaxAttempts tries, and never
// past the request's deadline: a wait or a try the deadline would cut is
// not started, and the last answer (or error) is returned. A key the
// request already carries is kept. Otherwise it is derived from the
// request being served by zerolock's middleware or interceptor (the
// request's context), from the method and path, and from the ordinal of
// this call within the served request, so the served request retried
// makes the same keys; without one it is random, one per request. The
// body is read once, and sent again with each try. Requests no route
// matches pass through untouched. The error wraps ErrBadConfig.
func NewTransport(c Conf, next http.RoundTripper) (http.RoundTripper, error) {
	c = withDefaults(c)
	trees, err := c.routes()
	if err != nil {
		return nil, err
	}
	if next == nil {
		next = http.DefaultTransport
	}
	return &transport{conf: c, trees: trees, next: next}, nil
}

// MustNewTransport is NewTransport that exits through logx.Must on a bad
// configuration, as go-zero's MustNew functions do.
func MustNewTransport(c Conf, next http.RoundTripper) http.RoundTripper {
	t, err := NewTransport(c, next)
	logx.Must(err)
	return t
}

type transport struct {
	conf  Conf
	trees map[string]*search.Tree
	next  http.RoundTripper
}

// retried are the statuses whose answers, with Retry-After, are retried.
var retried = map[int]bool{
	http.StatusConflict: true, http.StatusTooEarly: true,
	http.StatusTooManyRequests: true, http.StatusServiceUnavailable: true,
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	tree, ok := t.trees[req.Method]
	if !ok {
		return t.next.RoundTrip(req)
	}
	if _, ok := tree.Search(path.Clean("/" + req.URL.Path)); !ok {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	key := req.Header.Get(KeyHeader)
	if key == "" {
		key = guard.OutgoingKey(ctx, req.Method+" "+req.URL.Path)
	}
	body, err := readBody(req)
	if err != nil {
		return nil, err
	}
	wait := t.conf.Backoff
	for attempt := 1; ; attempt++ {
		resp, err := t.try(ctx, req, key, body)
		if attempt >= t.conf.MaxAttempts {
			return resp, err
		}
		var delay time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			return resp, err // the caller's own end
		case err != nil:
			delay = jitter(wait) // no answer arrived, or AttemptTimeout cut the try
		case retried[resp.StatusCode] && resp.Header.Get("Retry-After") != "":
			delay = retryAfter(resp.Header.Get("Retry-After"), jitter(wait))
			if delay > maxWait {
				// A server asking for longer (a result refused until its
				// Retain passes, 24 h) is answering, not throttling.
				return resp, nil
			}
		default:
			return resp, nil
		}
		if d, ok := ctx.Deadline(); ok && time.Now().Add(delay).After(d) {
			return resp, err // the deadline would cut the wait: the last answer
		}
		if resp != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
		}
		timer := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
		wait = min(2*wait, maxWait)
	}
}

// maxWait bounds the wait between tries: the back-off's doubling stops at
// it, and a longer Retry-After is the request's answer, not a wait.
const maxWait = time.Minute

// try sends one try of req with key and body, bounded by AttemptTimeout.
func (t *transport) try(ctx context.Context, req *http.Request, key string, body []byte) (*http.Response, error) {
	var cancel context.CancelFunc = func() {}
	if t.conf.AttemptTimeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, t.conf.AttemptTimeout)
	}
	r := req.Clone(ctx)
	r.Header.Set(KeyHeader, key)
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// cancelOnClose ends a try's context when its answer's body is closed:
// the body is read under it.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// readBody reads req's body once, so each try can send it again; nil for
// a request without one.
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	return io.ReadAll(req.Body)
}

// retryAfter reads a Retry-After value (seconds or an HTTP date), or
// returns fallback.
func retryAfter(v string, fallback time.Duration) time.Duration {
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		if secs > int(maxWait/time.Second) {
			return maxWait + time.Second // past maxWait, without overflowing
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(time.Until(at), 0)
	}
	return fallback
}

// jitter spreads d over [d/2, d) so clients do not retry in step.
func jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	return d/2 + rand.N(d/2)
}
