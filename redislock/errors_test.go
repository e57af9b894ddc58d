package redislock_test

import (
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
