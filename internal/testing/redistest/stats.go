package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Calls returns how many times the server has run the named commands, in
// total, from INFO commandstats (names in lower case: "evalsha",
// "spublish"). A script's nested commands count too.
func Calls(tb testing.TB, admin *redis.Client, names ...string) int64 {
	tb.Helper()
	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("redistest: INFO commandstats: %v", err)
	}
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want["cmdstat_"+n] = true
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !want[name] {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, err := strconv.ParseInt(calls, 10, 64)
		if err != nil {
			tb.Fatalf("redistest: commandstats line %q: %v", line, err)
		}
		total += n
	}
	return total
}

// ErrorCount returns how many error replies of a kind (WRONGTYPE, NOSCRIPT,
// ...) the server behind admin has answered since it started (INFO
// errorstats: errorstat_<kind>:count=N).
func ErrorCount(tb testing.TB, admin *redis.Client, kind string) int64 {
	tb.Helper()
	info, err := admin.Info(context.Background(), "errorstats").Result()
	if err != nil {
		tb.Fatalf("redistest: INFO errorstats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || name != "errorstat_"+kind {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(stats, "count="), 10, 64)
		if err != nil {
			tb.Fatalf("redistest: errorstats line %q: %v", line, err)
		}
		return n
	}
	return 0
}
