package middleware

import (
	"context"
	"testing"
)

func TestWindowFailed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ended  error
		status int
		want   bool
	}{
		{"served", nil, 200, false},
		{"refused by the handler", nil, 409, false},
		{"server error", nil, 500, true},
		{"go-zero's timeout answered first", context.DeadlineExceeded, 200, true},
		{"client left, handler completed", context.Canceled, 200, false},
		{"client left, handler redirected", context.Canceled, 303, false},
		{"client left, handler gave up", context.Canceled, 400, true},
		{"client left, handler wrote nothing", context.Canceled, 0, false},
	} {
		if got := windowFailed(tc.ended, tc.status); got != tc.want {
			t.Errorf("%s: windowFailed(%v, %d) = %v, want %v", tc.name, tc.ended, tc.status, got, tc.want)
		}
	}
}
