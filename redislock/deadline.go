package redislock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// honoursDeadlines reports whether a store's calls return when their
// context ends. go-redis clients do only with ContextTimeoutEnabled (and then
// only for deadlines); otherwise a call on a stalled server waits for the
// client's read timeout (3 s by default), whatever the context says.
// go-zero's clients never enable it.
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

// within runs call and returns its result, or ctx's error as soon as ctx
// ends, so that every lock call returns by its context's deadline even on a
// store that would block longer. The abandoned call finishes in the
// background and its result is dropped: its outcome is unknown to the
// caller, as with any error. Calls whose context cannot end, or that the
// store itself bounds, run directly with no goroutine.
func within[T any](ctx context.Context, guarded bool, call func() T) (T, error) {
	if ctx.Done() == nil {
		return call(), nil
	}
	if _, ok := ctx.Deadline(); !guarded && ok {
		return call(), nil
	}
	done := make(chan T, 1)
	go func() { done <- call() }()
	select {
	case r := <-done:
		return r, nil
	case <-ctx.Done():
		var zero T
		return zero, ctx.Err()
	}
}
