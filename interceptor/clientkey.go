package interceptor

import (
	"context"

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
// ctx serves, or random outside one (guard.OutgoingKey, shared with the
// HTTP client).
func callKeyFor(ctx context.Context, method string) string {
	return guard.OutgoingKey(ctx, method)
}
