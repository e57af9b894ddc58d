package httpclient

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/search"

	"github.com/zerolock/zerolock/internal/guard"
	"github.com/zerolock/zerolock/internal/retry"
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
// A 409 that zerolock's middleware sent for a duplicate (it names its
// rule's mode in Zerolock-Mode) is retried only from a replay rule, whose
// retry gets the first request's response, and then after the back-off
// (up to its Retry-After, which is how long the first request's hold has
// left, not when its response comes): from an inflight rule a retry made
// once the first request ended would run it again, and a window rule
// refuses it until the window ends. An error that no retry can fix (a
// certificate the client does not trust, a host name that does not
// resolve) is returned at once.
//
// Never on other answers, never more than MaxAttempts tries, and never
// past the request's deadline: a wait or a try the deadline would cut is
// not started, and the last answer (or error) is returned. A key the
// request already carries is kept. Otherwise it is derived from the
// request being served by zerolock's middleware or interceptor (the
// request's context), from the method and path, and from the ordinal of
// this call within the served request, so the served request retried
// makes the same keys under a replay rule (under the other modes each
// request served makes its own); without one it is random, one per
// request. The body is sent
// again with each try: from the request's GetBody when it has one (as
// http.NewRequest sets for in-memory bodies), else from a copy read into
// memory before the first try; a body without GetBody over 8 MiB is sent
// once, and the request is not retried.
// AttemptTimeout bounds a try until its answer's headers arrive, never the
// reading of its body. Requests no route matches pass through untouched.
// The error wraps ErrBadConfig.
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

// modeHeader is the middleware's ModeHeader, which names the mode of the
// rule that refused a duplicate (a test checks that they agree).
const modeHeader = "Zerolock-Mode"

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
	body, err := newReplayableBody(req, t.conf.MaxAttempts > 1)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		resp, cut, err := t.try(ctx, req, key, body, attempt)
		if attempt >= t.conf.MaxAttempts || !body.again() {
			return resp, err
		}
		backoff := retry.Backoff(t.conf.Backoff, attempt)
		var delay time.Duration
		switch {
		case err != nil && ctx.Err() != nil:
			return resp, err // the caller's own end
		case err != nil && !cut && permanent(err):
			return resp, err
		case err != nil:
			delay = backoff // no answer arrived, or AttemptTimeout cut the try
		case resp.Header.Get(modeHeader) != "":
			// zerolock's refusal of a duplicate, whatever its status (the
			// rule's RejectCode, or a refusal handler's).
			if resp.Header.Get(modeHeader) != "replay" {
				return resp, nil // a retry would run the request again, or be refused again
			}
			delay = min(backoff, retryAfter(resp.Header.Get("Retry-After"), backoff))
		case retried[resp.StatusCode] && resp.Header.Get("Retry-After") != "":
			delay = retryAfter(resp.Header.Get("Retry-After"), backoff)
			if delay > retry.MaxWait {
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
			// Closed, not drained: draining could spend the time the
			// deadline left for the next try.
			resp.Body.Close()
		}
		if !retry.Pause(ctx, delay) {
			return nil, cmp.Or(ctx.Err(), context.DeadlineExceeded)
		}
	}
}

// try sends the attempt-th try of req with key and body. AttemptTimeout,
// when set, bounds it until the answer's headers arrive; cut reports that
// it ended the try.
func (t *transport) try(ctx context.Context, req *http.Request, key string, body *replayableBody, attempt int) (*http.Response, bool, error) {
	ctx, cancel := context.WithCancel(ctx)
	var timedOut atomic.Bool
	stop := func() bool { return true } // no timer: it never fires
	if t.conf.AttemptTimeout > 0 {
		timer := time.AfterFunc(t.conf.AttemptTimeout, func() {
			timedOut.Store(true)
			cancel()
		})
		stop = timer.Stop
	}
	r := req.Clone(ctx)
	if r.Header == nil {
		r.Header = make(http.Header)
	}
	r.Header.Set(KeyHeader, key)
	if err := body.set(r, attempt); err != nil {
		stop()
		cancel()
		return nil, false, err
	}
	resp, err := t.next.RoundTrip(r)
	if !stop() && err == nil {
		// The timer fired as the headers came: the try's context is
		// ending, so its body cannot be read. A cut try, as any other.
		resp.Body.Close()
		resp, err = nil, context.Canceled
	}
	if err != nil {
		cancel()
		if timedOut.Load() {
			return nil, true, fmt.Errorf("%w (httpclient: the try was cut by AttemptTimeout %v: %w)",
				err, t.conf.AttemptTimeout, context.DeadlineExceeded)
		}
		return nil, false, err
	}
	// The body is read under the try's context: closing it ends it.
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, false, nil
}

// cancelOnClose ends a try's context when its answer's body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// permanent reports whether err, a try's error, is one that no retry can
// fix: a certificate the client does not trust, or a host name that does
// not resolve.
func permanent(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		invalid          x509.CertificateInvalidError
		hostname         x509.HostnameError
		verification     *tls.CertificateVerificationError
		dns              *net.DNSError
	)
	switch {
	case errors.As(err, &unknownAuthority), errors.As(err, &invalid), errors.As(err, &hostname),
		errors.As(err, &verification):
		return true
	case errors.As(err, &dns):
		return dns.IsNotFound
	}
	return false
}

// retryAfter reads a Retry-After value (seconds or an HTTP date), or
// returns fallback.
func retryAfter(v string, fallback time.Duration) time.Duration {
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		if secs > int(retry.MaxWait/time.Second) {
			return retry.MaxWait + time.Second // past MaxWait, without overflowing
		}
		return time.Duration(secs) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(time.Until(at), 0)
	}
	return fallback
}
