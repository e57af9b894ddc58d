package guard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
)

// OutgoingKey returns the idempotency key of an outgoing call (call names
// it: a gRPC method, an HTTP method and path) made with ctx. While ctx
// serves a request that a rule matched (RequestFrom), the key is derived
// from the request's key, call and the ordinal of this call to it within
// the request: two calls make two keys, and under a replay rule the same
// request retried makes the same keys (under other modes each request
// served makes its own: see withRequest). Otherwise it is 128 random
// bits, one per logical call.
// Callers compute it once per logical call and send it with every
// attempt, so that the ordinal counts calls, not attempts.
func OutgoingKey(ctx context.Context, call string) string {
	r, ok := RequestFrom(ctx)
	if !ok {
		var b [16]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
		return base64.RawURLEncoding.EncodeToString(b[:])
	}
	return derivedKey(r.Key, call, r.Next(call))
}

// derivedKey hashes the served request's key, the call and the ordinal of
// the call into a key of 43 characters (SHA-256, base64url): bounded
// whatever the request's key, and revealing nothing of it to the service
// called. Each part is length-prefixed, so that no two different triples
// hash the same bytes.
func derivedKey(requestKey, call string, ordinal int) string {
	h := sha256.New()
	var n [8]byte
	for _, part := range []string{requestKey, call} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	binary.BigEndian.PutUint64(n[:], uint64(ordinal))
	h.Write(n[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}
