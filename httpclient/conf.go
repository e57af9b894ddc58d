// Package httpclient is the client half of zerolock's idempotency for
// outgoing HTTP: a RoundTripper that gives each configured request an
// Idempotency-Key and retries it, with the same key, on failures that a
// retry can fix. Its key is derived from the request being served, so a
// REST or gRPC request that zerolock's middleware or interceptor matched,
// retried by its client, makes the same outgoing keys, and the service it
// calls (with zerolock's replay mode) runs each call once.
//
//	client := &http.Client{Transport: httpclient.MustNewTransport(c.Payments, http.DefaultTransport)}
//
// It works with net/http and with go-zero's httpc (httpc.NewServiceWithClient).
package httpclient

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/zeromicro/go-zero/core/search"
)

// ErrBadConfig is wrapped by every configuration error of NewTransport.
var ErrBadConfig = errors.New("httpclient: bad configuration")

// Defaults of Conf, as its conf tags declare them.
const (
	DefaultMaxAttempts = 3
	DefaultBackoff     = 100 * time.Millisecond
)

// Conf says which outgoing requests get an Idempotency-Key and may be
// retried, and how. It is loaded with go-zero's conf package; zero fields
// of a Conf built in code take the same defaults.
type Conf struct {
	// Routes are the requests that get a key and may be retried; any other
	// passes through untouched.
	Routes []Route
	// MaxAttempts bounds the tries of one request, the first included.
	MaxAttempts int `json:",default=3"`
	// Backoff is the first wait between tries, then doubled with jitter; a
	// Retry-After of the answer wins.
	Backoff time.Duration `json:",default=100ms"`
	// AttemptTimeout bounds one try, so that a hung try can be retried; 0
	// leaves the request's own deadline as the only bound.
	AttemptTimeout time.Duration `json:",optional"`
}

// Route names outgoing requests by method and path.
type Route struct {
	// Method is the HTTP method, such as POST.
	Method string
	// Path is the request's path, or a go-zero route pattern such as
	// /orders/:id/pay.
	Path string
}

// withDefaults fills the zero fields of a Conf built in code.
func withDefaults(c Conf) Conf {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	return c
}

// routes compiles c's routes into one search tree per method.
func (c Conf) routes() (map[string]*search.Tree, error) {
	switch {
	case c.MaxAttempts < 1:
		return nil, fmt.Errorf("%w: MaxAttempts %d must be at least 1 (the first try counts)", ErrBadConfig, c.MaxAttempts)
	case c.Backoff < 0:
		return nil, fmt.Errorf("%w: Backoff %v must not be negative", ErrBadConfig, c.Backoff)
	case c.AttemptTimeout < 0:
		return nil, fmt.Errorf("%w: AttemptTimeout %v must not be negative", ErrBadConfig, c.AttemptTimeout)
	}
	trees := make(map[string]*search.Tree)
	for _, r := range c.Routes {
		if r.Method == "" || r.Method != strings.ToUpper(r.Method) {
			return nil, fmt.Errorf("%w: route %s %s: method must be upper case, such as POST", ErrBadConfig, r.Method, r.Path)
		}
		if !strings.HasPrefix(r.Path, "/") {
			return nil, fmt.Errorf("%w: route %s %s: path must start with /", ErrBadConfig, r.Method, r.Path)
		}
		tree, ok := trees[r.Method]
		if !ok {
			tree = search.NewTree()
			trees[r.Method] = tree
		}
		if err := tree.Add(r.Path, r.Method+" "+r.Path); err != nil {
			return nil, fmt.Errorf("%w: route %s %s: %v", ErrBadConfig, r.Method, r.Path, err)
		}
	}
	return trees, nil
}
