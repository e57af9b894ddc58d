package redislock

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"
)

// WithDeadlineGuard makes every call of the lock (AcquireCtx,
// AcquireWaitCtx, ReleaseCtx, TTL) return when its context ends, even on a
// store that would keep reading: go-redis clients do keep reading past a
// context's deadline unless made with ContextTimeoutEnabled, and go-zero's
// clients are never made with it, so on a stalled server a call returns only
// after the client's read timeout (3 s by default).
//
// A guarded call whose context can end runs in a goroutine of its own; when
// the context ends first, the call returns the context's error and the
// abandoned command finishes in the background with its outcome unknown, as
// after any error (an acquire that landed holds the key until it expires or
// this instance releases it). The hand-off between goroutines costs latency
// on every call (about 12 µs per call on the 2-core VM of docs/BENCHMARKS.md,
// a quarter of a lock cycle there), which is why it is not the default. A
// go-redis client with ContextTimeoutEnabled keeps deadlines by itself at no
// cost, and then only calls whose context has no deadline but can be
// cancelled take the goroutine.
func WithDeadlineGuard() Option {
	return func(o *options) {
		o.deadlineGuard = true
	}
}

// deadlineGuard says which calls need a goroutine to return on time.
type deadlineGuard uint8

const (
	guardNone         deadlineGuard = iota // run every call directly
	guardCancellation                      // the store keeps deadlines, not cancellation
	guardAll                               // the store keeps neither
)

// guardFor is the guard WithDeadlineGuard asks for on store.
func guardFor(store Store, requested bool) deadlineGuard {
	switch {
	case !requested:
		return guardNone
	case honoursDeadlines(store):
		return guardCancellation
	}
	return guardAll
}

// honoursDeadlines reports whether a store's calls return by their
// context's deadline: go-redis clients made with ContextTimeoutEnabled.
func honoursDeadlines(store Store) bool {
	switch c := store.(type) {
	case *redis.Client:
		return c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		return c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		return c.Options().ContextTimeoutEnabled
	}
	return false
}

// within runs call and returns its result, or, when the guard asks for it,
// ctx's error as soon as ctx ends, leaving the call to finish in the
// background with its result dropped.
func within[T any](ctx context.Context, guard deadlineGuard, call func() T) (T, error) {
	if guard == guardNone || ctx.Done() == nil {
		return call(), nil
	}
	if _, ok := ctx.Deadline(); ok && guard == guardCancellation {
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

// abandonedCall is the error of a call within gave up on when its context
// ended: the command may have run, or may still run, with its reply
// dropped. It reads and unwraps as the context's error.
type abandonedCall struct{ ctxErr error }

func (e abandonedCall) Error() string { return e.ctxErr.Error() }
func (e abandonedCall) Unwrap() error { return e.ctxErr }

// mayHaveRun reports whether err, the error of a call its context's end
// cut short, leaves open that Redis ran the command: a call within
// abandoned, or a read that timed out (a go-redis client with
// ContextTimeoutEnabled sets its socket deadlines from the context).
// go-redis's own context errors come before anything is sent (waiting for
// a connection, a cluster's slot map, a retry's back-off).
func mayHaveRun(err error) bool {
	var abandoned abandonedCall
	if errors.As(err, &abandoned) {
		return true
	}
	// context.DeadlineExceeded is a net.Error whose Timeout is true too.
	var netErr *net.OpError
	return errors.As(err, &netErr) && netErr.Timeout()
}
