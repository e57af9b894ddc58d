package guard

import (
	"testing"
	"time"
)

// DurationText drops the zero units time.Duration's String writes.
func TestDurationText(t *testing.T) {
	for d, want := range map[time.Duration]string{time.Second: "1s", time.Minute: "1m", time.Hour: "1h",
		90 * time.Minute: "1h30m", 1500 * time.Millisecond: "1.5s", 100 * time.Millisecond: "100ms", 10 * time.Second: "10s"} {
		if got := DurationText(d); got != want {
			t.Errorf("DurationText(%v) = %q, want %q", d, got, want)
		}
	}
}
