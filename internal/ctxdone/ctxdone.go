// Package ctxdone tells whether a context has ended, including the moment
// after its deadline passes and before its timer fires.
package ctxdone

import (
	"context"
	"time"
)

// Err is ctx.Err(), or context.DeadlineExceeded once the deadline has
// passed although the context's own timer has not fired yet. A go-redis
// client with ContextTimeoutEnabled puts the deadline on the socket, and
// the socket's "i/o timeout" can come back a moment before ctx.Err() is
// set (found by go test -race -count=3).
func Err(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
