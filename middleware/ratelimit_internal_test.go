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

// ceilSeconds rounds up, never below 0; periodText drops zero units.
func TestRateUnits(t *testing.T) {
	for d, want := range map[time.Duration]int64{0: 0, -time.Second: 0, time.Microsecond: 1, time.Second: 1,
		time.Second + time.Microsecond: 2, time.Minute: 60} {
		if got := ceilSeconds(d); got != want {
			t.Errorf("ceilSeconds(%v) = %d, want %d", d, got, want)
		}
	}
	for d, want := range map[time.Duration]string{time.Second: "1s", time.Minute: "1m", time.Hour: "1h",
		90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1.5s", 100 * time.Millisecond: "100ms"} {
		if got := periodText(d); got != want {
			t.Errorf("periodText(%v) = %q, want %q", d, got, want)
		}
	}
}
