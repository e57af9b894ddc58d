// Package deadline is redislock's deadline guard (WithDeadlineGuard): it
// runs a call in a goroutine of its own when the store would not return by
// the call's context, and tells a call cut short after it was sent from
// one stopped before.
package deadline

import (
	"context"
	"errors"
	"net"
)

// Guard says which calls need a goroutine to return on time.
type Guard uint8

const (
	None         Guard = iota // run every call directly
	Cancellation              // the store keeps deadlines, not cancellation
	All                       // the store keeps neither
)

// For is the guard WithDeadlineGuard asks for (requested) on a store that
// does or does not return by its context's deadline by itself (honours: a
// go-redis client made with ContextTimeoutEnabled).
func For(honours, requested bool) Guard {
	switch {
	case !requested:
		return None
	case honours:
		return Cancellation
	}
	return All
}

// Within runs call and returns its result, or, when the guard asks for it,
// ctx's error as soon as ctx ends, leaving the call to finish in the
// background with its result dropped.
func Within[T any](ctx context.Context, guard Guard, call func() T) (T, error) {
	if guard == None || ctx.Done() == nil {
		return call(), nil
	}
	if _, ok := ctx.Deadline(); ok && guard == Cancellation {
		return call(), nil
	}
	done := make(chan T, 1)
	go func() { done <- call() }()
	select {
	case r := <-done:
		return r, nil
	case <-ctx.Done():
		var zero T
		return zero, abandonedCall{ctx.Err()}
	}
}

// abandonedCall is the error of a call Within gave up on when its context
// ended: the command may have run, or may still run, with its reply
// dropped. It reads and unwraps as the context's error.
type abandonedCall struct{ ctxErr error }

func (e abandonedCall) Error() string { return e.ctxErr.Error() }
func (e abandonedCall) Unwrap() error { return e.ctxErr }

// MayHaveRun reports whether err, the error of a call its context's end
// cut short, leaves open that Redis ran the command: a call Within
// abandoned, or a read that timed out (a go-redis client with
// ContextTimeoutEnabled sets its socket deadlines from the context).
// go-redis's own context errors come before anything is sent (waiting for
// a connection, a cluster's slot map, a retry's back-off).
func MayHaveRun(err error) bool {
	var abandoned abandonedCall
	if errors.As(err, &abandoned) {
		return true
	}
	// context.DeadlineExceeded is a net.Error whose Timeout is true too.
	var netErr *net.OpError
	return errors.As(err, &netErr) && netErr.Timeout()
}
