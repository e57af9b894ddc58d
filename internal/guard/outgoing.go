package guard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
)

// OutgoingKey returns the idempotency key of an outgoing call (call names
// it: a gRPC method, an HTTP method and path) made with ctx. While ctx
// serves a request that a rule matched (RequestFrom), the key is derived
// from the request's key, call and the ordinal of this call to it within
// the request, so the same request retried makes the same keys and two
// calls make two; otherwise it is random, one per logical call. Callers
// compute it once per logical call and send it with every attempt.
func OutgoingKey(ctx context.Context, call string) string {
	r, ok := RequestFrom(ctx)
	if !ok {
		var b [18]byte
		_, _ = rand.Read(b[:])
		return base64.RawURLEncoding.EncodeToString(b[:])
	}
	n := r.Next(call)
	h := sha256.New()
	for _, part := range []string{r.Key, call, strconv.Itoa(n)} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:24])
}
