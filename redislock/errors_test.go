package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock"
)

// The errors of a store set up wrong are zerolock.ErrMisconfigured, which
// the middleware's and the interceptor's FailOpen and start-up check test
// for, and still themselves; the others are not.
func TestMisconfiguredErrors(t *testing.T) {
	for _, err := range []error{redislock.ErrIdentityRejected, redislock.ErrNotSemaphore} {
		wrapped := fmt.Errorf("redislock: acquire %q: %w", "k", err)
		if !errors.Is(wrapped, zerolock.ErrMisconfigured) || !errors.Is(wrapped, err) {
			t.Errorf("%v: errors.Is ErrMisconfigured %v, itself %v; want both", err,
				errors.Is(wrapped, zerolock.ErrMisconfigured), errors.Is(wrapped, err))
		}
		if errors.Is(zerolock.ErrMisconfigured, err) {
			t.Errorf("ErrMisconfigured is %v", err)
		}
	}
	for _, err := range []error{redislock.ErrUnexpectedReply, redislock.ErrWaitCutTry, redislock.ErrInvalidExpiry} {
		if errors.Is(err, zerolock.ErrMisconfigured) {
			t.Errorf("%v is ErrMisconfigured", err)
		}
	}
}

// A *QuorumError, wrapped as a caller would, still matches ErrQuorum and
// each node's error (errors.Is) and is still found by errors.As; its message
// is its own, not ErrQuorum's.
func TestQuorumErrorMatches(t *testing.T) {
	qe := &redislock.QuorumError{Acquired: 1, Needed: 2, Nodes: []redislock.NodeOutcome{
		{Node: 0, OK: true},
		{Node: 1, Err: context.DeadlineExceeded},
		{Node: 2},
	}}
	err := fmt.Errorf("acquire: %w", qe)
	if !errors.Is(err, redislock.ErrQuorum) {
		t.Errorf("errors.Is(%v, ErrQuorum) = false", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("errors.Is(%v, node 1's context.DeadlineExceeded) = false", err)
	}
	var got *redislock.QuorumError
	if !errors.As(err, &got) || got != qe {
		t.Errorf("errors.As(%v, *QuorumError) = %v, want the error itself", err, got)
	}
	if errors.Is(redislock.ErrQuorum, qe) || errors.Is(err, redislock.ErrNotReplicated) {
		t.Error("the quorum error matches an error it does not wrap")
	}
	want := "redislock: no quorum: 1 of 3 nodes, 2 needed; node 0: ok; node 1: context deadline exceeded; node 2: held by another"
	if qe.Error() != want {
		t.Errorf("Error() = %q, want %q", qe.Error(), want)
	}
}
