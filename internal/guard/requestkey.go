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
	// Key is the request's lock key (Rule.Key's); in limit mode, where
	// concurrent requests share a key, it is made unique to the request.
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
// under key; unique makes the key the request's own (limit mode).
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
