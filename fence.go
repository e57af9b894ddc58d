package zerolock

import "context"

type fenceKey struct{}

// ContextWithFence returns a context carrying a fencing token, as the
// middleware and the interceptor give their handlers.
func ContextWithFence(ctx context.Context, fence int64) context.Context {
	return context.WithValue(ctx, fenceKey{}, fence)
}

// FenceFromContext returns the fencing token of the lock the request holds,
// and false when there is none (fencing off, or no lock rule matched).
func FenceFromContext(ctx context.Context) (int64, bool) {
	fence, ok := ctx.Value(fenceKey{}).(int64)
	return fence, ok
}
