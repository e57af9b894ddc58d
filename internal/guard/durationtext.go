package guard

import (
	"strings"
	"time"
)

// DurationText writes d as a person would, for the refusals' messages:
// 1m, not 1m0s; 1h30m, not 1h30m0s.
func DurationText(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}
