package middleware

import (
	"testing"
	"time"
)

// sfString writes a Structured Field String: quoted, with backslashes and
// quotes escaped, and bytes outside printable ASCII percent-encoded.
func TestSFString(t *testing.T) {
	for in, want := range map[string]string{
		"POST /login":       `"POST /login"`,
		`GET /a"b\c`:        `"GET /a\"b\\c"`,
		"GET /登录":           `"GET /%E7%99%BB%E5%BD%95"`,
		"GET /tab\tand\x7f": `"GET /tab%09and%7F"`,
	} {
		if got := sfString(in); got != want {
			t.Errorf("sfString(%q) = %s, want %s", in, got, want)
		}
	}
}

// ceilSeconds rounds up, never below 0 (DurationText's test is guard's).
func TestRateUnits(t *testing.T) {
	for d, want := range map[time.Duration]int64{0: 0, -time.Second: 0, time.Microsecond: 1, time.Second: 1,
		time.Second + time.Microsecond: 2, time.Minute: 60} {
		if got := ceilSeconds(d); got != want {
			t.Errorf("ceilSeconds(%v) = %d, want %d", d, got, want)
		}
	}
}
