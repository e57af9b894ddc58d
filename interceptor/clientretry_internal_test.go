package interceptor

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestBackoffWait: the first wait is Backoff, each later one doubles and
// is spread by ±20%, and the doubling stops at maxBackoff.
func TestBackoffWait(t *testing.T) {
	const base = 100 * time.Millisecond
	for _, tc := range []struct {
		n        int
		jitter   float64
		want     time.Duration
		describe string
	}{
		{1, 0, base, "the first wait, low jitter"},
		{1, 0.999, base, "the first wait, high jitter"},
		{2, 0.5, 200 * time.Millisecond, "the second, mid jitter"},
		{2, 0, 160 * time.Millisecond, "the second, low jitter"},
		{3, 0.5, 400 * time.Millisecond, "the third, mid jitter"},
		{3, 1, 480 * time.Millisecond, "the third, top of the spread"},
		{100, 0.5, maxBackoff, "far along, capped"},
	} {
		if got := backoffWait(base, tc.n, tc.jitter); got != tc.want {
			t.Errorf("%s: backoffWait(%v, %d, %v) = %v, want %v", tc.describe, base, tc.n, tc.jitter, got, tc.want)
		}
	}
}

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
		{"RetryInfo past maxBackoff", refusal(codes.Aborted, "", 24*time.Hour), false, 0, false},
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

// TestPauseRespectsDeadline: a wait the deadline would cut is not started.
func TestPauseRespectsDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if pause(ctx, 2*time.Hour) {
		t.Fatal("pause started a wait past the deadline")
	}
	if !pause(ctx, 0) {
		t.Fatal("pause refused a wait of 0 well within the deadline")
	}
	cancel()
	if pause(ctx, 0) {
		t.Fatal("pause let an attempt follow a cancelled context")
	}
}
