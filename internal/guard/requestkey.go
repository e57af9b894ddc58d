package guard

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
)

// A Request is what the client side knows of the request being served:
// its lock key, from which an outgoing call made while serving it derives
// its idempotency key (so the same request retried makes the same
// outgoing keys), and how many calls it made to each method (so that two
// calls of one method in one request get two keys).
type Request struct {
	// Key is the request's lock key (Rule.Key's) under a replay rule; under
	// any other it is made unique to the request (see withRequest).
	Key string

	mu    sync.Mutex
	calls map[string]int
}

// Next returns the ordinal of this call to method within the request: 1
// for the first, 2 for the second, and so on.
func (r *Request) Next(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls == nil {
		r.calls = make(map[string]int)
	}
	r.calls[method]++
	return r.calls[method]
}

// requestKey is the context key of the Request being served.
type requestKey struct{}

// withRequest returns the handler's context, carrying the Request served
// under key; unique makes the key the request's own, with 96 random bits.
//
// Only a replay rule tells a retry from a new request by its key: a later
// request with the key gets the first one's result, so the calls of a
// retry that runs again (the first's answer was not kept, or its process
// died) must carry the first run's keys, and the service they call
// answers them with the results it kept. Under the other modes a later
// request with the key is new work: inflight refuses only while the first
// runs, window only within Expire, limit lets Permits run at once, and
// rate admits Quota per Period.
// Were their calls keyed on the lock key alone, a second "add to cart"
// with the same body would be answered downstream with the first one's
// stored result, and one with another body refused as a reused key: so
// each request's calls get keys of their own, and run as the request does.
func withRequest(ctx context.Context, key string, unique bool) context.Context {
	if unique {
		var b [12]byte
		_, _ = rand.Read(b[:])
		key += "#" + hex.EncodeToString(b[:])
	}
	return context.WithValue(ctx, requestKey{}, &Request{Key: key})
}

// RequestFrom returns the Request that ctx serves, if a rule of the
// middleware or the interceptor matched it.
func RequestFrom(ctx context.Context) (*Request, bool) {
	r, ok := ctx.Value(requestKey{}).(*Request)
	return r, ok
}
