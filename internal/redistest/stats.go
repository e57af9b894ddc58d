package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Publishes returns how many SPUBLISH and PUBLISH calls the server has run
// (INFO commandstats), to tell whether a release announced itself.
func Publishes(tb testing.TB, admin *redis.Client) int {
	tb.Helper()
	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		tb.Fatalf("redistest: INFO commandstats: %v", err)
	}
	total := 0
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_spublish" && name != "cmdstat_publish") {
			continue
		}
		calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
		n, err := strconv.Atoi(calls)
		if err != nil {
			tb.Fatalf("redistest: commandstats line %q: %v", line, err)
		}
		total += n
	}
	return total
}
