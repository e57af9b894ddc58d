package zklock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"
)

// call runs f, one blocking ZooKeeper request (the client takes no
// context), and returns its result, or ctx's error as soon as ctx ends.
// An abandoned f finishes in its goroutine; undo, when set, then gets what
// f made, so a node created for a caller that left is deleted.
func call[T any](ctx context.Context, f func() (T, error), undo func(T)) (T, error) {
	var zero T
	if ctx.Done() == nil {
		return f()
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	type result struct {
		v   T
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := f()
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		return r.v, r.err
	case <-ctx.Done():
		if undo != nil {
			go func() {
				if r := <-done; r.err == nil {
					undo(r.v)
				}
			}()
		}
		return zero, ctx.Err()
	}
}

// wrap names the operation and key. ZooKeeper's errors are wrapped with
// ErrZooKeeper, and errors.Is(err, ctx.Err()) holds whenever ctx ended.
func (l *Lock) wrap(ctx context.Context, op string, err error) error {
	ctxErr := ctx.Err()
	switch {
	case ctxErr != nil && errors.Is(err, ctxErr), errors.Is(err, ErrNodeLost), errors.Is(err, ErrInvalidExpiry):
		return fmt.Errorf("zklock: %s %q: %w", op, l.key, err)
	case ctxErr != nil:
		return fmt.Errorf("%w: %s %q: %w (%w)", ErrZooKeeper, op, l.key, err, ctxErr)
	}
	return fmt.Errorf("%w: %s %q: %w", ErrZooKeeper, op, l.key, err)
}

// How long discard keeps trying to delete a node it could not delete at
// once (the connection dropped): while the session lives the node would
// otherwise block the key, and a reconnect within the session timeout
// keeps the session.
const (
	discardFor      = 30 * time.Second
	discardFirstGap = 50 * time.Millisecond
	discardMaxGap   = time.Second
)

// discard deletes a node this instance created but does not, or no longer,
// hold. When the delete fails it retries in the background, for up to
// discardFor, until the node is gone or the session that owned it is.
func (l *Lock) discard(node string, session int64) {
	if l.tryDelete(node) {
		return
	}
	go func() {
		gap := discardFirstGap
		deadline := time.Now().Add(discardFor)
		for time.Now().Before(deadline) && l.conn.SessionID() == session {
			time.Sleep(gap) // a back-off between attempts, not synchronisation
			if l.tryDelete(node) {
				return
			}
			gap = min(2*gap, discardMaxGap)
		}
	}()
}

// tryDelete reports whether node is gone after one delete.
func (l *Lock) tryDelete(node string) bool {
	err := l.conn.Delete(node, -1)
	return err == nil || errors.Is(err, zk.ErrNoNode)
}
