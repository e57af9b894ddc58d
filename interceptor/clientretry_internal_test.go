package interceptor

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/internal/guard"
)

// TestRetryWait: which failures are retried, and after how long.
func TestRetryWait(t *testing.T) {
	const backoff = 7 * time.Millisecond
	for _, tc := range []struct {
		name  string
		err   error
		cut   bool
		wait  time.Duration
		retry bool
	}{
		{"unavailable", status.Error(codes.Unavailable, ""), false, backoff, true},
		{"cut by AttemptTimeout", status.Error(codes.DeadlineExceeded, ""), true, backoff, true},
		{"the server's DeadlineExceeded", status.Error(codes.DeadlineExceeded, ""), false, 0, false},
		{"aborted with RetryInfo", refusal(codes.Aborted, "", 3*time.Second), false, 3 * time.Second, true},
		{"aborted without", status.Error(codes.Aborted, ""), false, 0, false},
		{"RetryInfo past retry.MaxWait", refusal(codes.Aborted, "", 24*time.Hour), false, 0, false},
		{"a replay duplicate, polled", duplicate(ruleIn(ModeReplay), "", 3*time.Second), false, backoff, true},
		{"a replay duplicate ending sooner", duplicate(ruleIn(ModeReplay), "", time.Millisecond), false, time.Millisecond, true},
		{"an inflight duplicate", duplicate(ruleIn(ModeInflight), "", 3*time.Second), false, 0, false},
		{"a window duplicate", duplicate(ruleIn(ModeWindow), "", 3*time.Second), false, 0, false},
		{"internal", status.Error(codes.Internal, ""), false, 0, false},
		{"not a status", errors.New("boom"), false, 0, false},
		{"cancelled", context.Canceled, false, 0, false},
	} {
		wait, retry := retryWait(tc.err, tc.cut, backoff)
		if retry != tc.retry || (retry && wait != tc.wait) {
			t.Errorf("%s: retryWait = %v, %v; want %v, %v", tc.name, wait, retry, tc.wait, tc.retry)
		}
	}
}

// ruleIn is a rule of mode, refusing duplicates with Aborted.
func ruleIn(mode string) *rule {
	return &rule{Rule: &guard.Rule{Policy: guard.Policy{Window: mode == ModeWindow, Replay: mode == ModeReplay}},
		rejectCode: codes.Aborted}
}
