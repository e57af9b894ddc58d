package retry

import (
	"context"
	"testing"
	"time"
)

// TestBackoff: each wait doubles the one before, from base, up to MaxWait,
// and every one, the first included, is spread by ±20%.
func TestBackoff(t *testing.T) {
	const base = 100 * time.Millisecond
	for _, tc := range []struct {
		n        int
		jitter   float64
		want     time.Duration
		describe string
	}{
		{1, 0.5, base, "the first wait, mid jitter"},
		{1, 0, 80 * time.Millisecond, "the first wait, low jitter"},
		{1, 0.75, 110 * time.Millisecond, "the first wait, high jitter"},
		{2, 0.5, 200 * time.Millisecond, "the second, mid jitter"},
		{2, 0, 160 * time.Millisecond, "the second, low jitter"},
		{3, 0.5, 400 * time.Millisecond, "the third, mid jitter"},
		{3, 1, 480 * time.Millisecond, "the third, top of the spread"},
		{100, 0.5, MaxWait, "far along, capped"},
	} {
		if got := backoff(base, tc.n, tc.jitter); got != tc.want {
			t.Errorf("%s: backoff(%v, %d, %v) = %v, want %v", tc.describe, base, tc.n, tc.jitter, got, tc.want)
		}
	}
	seen := make(map[time.Duration]bool)
	for range 20 {
		seen[Backoff(base, 1)] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 first waits were all %v: want them spread", Backoff(base, 1))
	}
}

// TestPause: a wait the deadline would cut is not started, and a
// cancelled context makes no attempt.
func TestPause(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if Pause(ctx, 2*time.Hour) {
		t.Fatal("Pause started a wait past the deadline")
	}
	if !Pause(ctx, 0) || !Pause(ctx, time.Millisecond) {
		t.Fatal("Pause refused a short wait well within the deadline")
	}
	cancel()
	if Pause(ctx, 0) || Pause(ctx, time.Hour) {
		t.Fatal("Pause let an attempt follow a cancelled context")
	}
}
