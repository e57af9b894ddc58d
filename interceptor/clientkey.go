package interceptor

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"

	"google.golang.org/grpc/metadata"

	"github.com/zerolock/zerolock/internal/guard"
)

// withCallKey returns ctx with the idempotency key of one logical call to
// method in its outgoing metadata: the caller's own if it set one, else
// one derived from the request being served, else a random one. It is
// called once per logical call, never per attempt, so that every attempt
// carries the same key and the ordinal counts calls, not attempts.
func withCallKey(ctx context.Context, method string) context.Context {
	if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get(IdempotencyKeyMetadata)) > 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, IdempotencyKeyMetadata, callKeyFor(ctx, method))
}

// callKeyFor makes the key of a call to method: derived from the request
// ctx serves, or random outside one.
func callKeyFor(ctx context.Context, method string) string {
	if r, ok := guard.RequestFrom(ctx); ok {
		return derivedKey(r.Key, method, r.Next(method))
	}
	return randomKey()
}

// derivedKey hashes the served request's key, the method and the
// ordinal of the call into a key of 43 characters (SHA-256, base64url):
// bounded whatever the request's key, and revealing nothing of it to the
// server called. Each part is length-prefixed, so that no two different
// triples hash the same bytes.
func derivedKey(requestKey, method string, ordinal int) string {
	h := sha256.New()
	var n [8]byte
	for _, part := range []string{requestKey, method} {
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	binary.BigEndian.PutUint64(n[:], uint64(ordinal))
	h.Write(n[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// randomKey is a fresh key of 128 random bits, base64url.
func randomKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
