package deadline

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"testing"
)

// TestMayHaveRun tells a try the wait limit cut short after it was sent
// (abandoned by the deadline guard, or a read that timed out on a client
// with ContextTimeoutEnabled) from one go-redis stopped before sending
// (its plain context errors).
func TestMayHaveRun(t *testing.T) {
	readTimeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"abandoned by the guard", abandonedCall{context.DeadlineExceeded}, true},
		{"abandoned, wrapped", fmt.Errorf("acquire: %w", abandonedCall{context.Canceled}), true},
		{"read timeout", readTimeout, true},
		{"read timeout, wrapped", fmt.Errorf("acquire: %w", readTimeout), true},
		{"go-redis's context error", context.DeadlineExceeded, false},
		{"refused connection", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, false},
	} {
		if got := MayHaveRun(tc.err); got != tc.want {
			t.Errorf("%s: MayHaveRun = %v, want %v", tc.name, got, tc.want)
		}
	}
	if err := (abandonedCall{context.DeadlineExceeded}); !errors.Is(err, context.DeadlineExceeded) || err.Error() != context.DeadlineExceeded.Error() {
		t.Errorf("abandonedCall reads %q and unwraps to %v; want the context's error", err.Error(), errors.Unwrap(err))
	}
}
