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
	want := make(map[string]bool, len(names))
	for _, n := range names {
		want["cmdstat_"+n] = true
	}
	return sumInfo(tb, admin, "commandstats", "calls", want)
}

// ErrorCount returns how many error replies of a kind (WRONGTYPE, NOSCRIPT,
// ...) the server behind admin has answered since it started (INFO
// errorstats: errorstat_<kind>:count=N).
func ErrorCount(tb testing.TB, admin *redis.Client, kind string) int64 {
	tb.Helper()
	return sumInfo(tb, admin, "errorstats", "count", map[string]bool{"errorstat_" + kind: true})
}

// sumInfo sums field over the lines of INFO section named in names, each
// line "name:field=N,other=...".
func sumInfo(tb testing.TB, admin *redis.Client, section, field string, names map[string]bool) int64 {
	tb.Helper()
	info, err := admin.Info(context.Background(), section).Result()
	if err != nil {
		tb.Fatalf("redistest: INFO %s: %v", section, err)
	}
	var total int64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !names[name] {
			continue
		}
		value, _, _ := strings.Cut(strings.TrimPrefix(stats, field+"="), ",")
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			tb.Fatalf("redistest: %s line %q: %v", section, line, err)
		}
		total += n
	}
	return total
}

// WaitedOn reports whether a waiting acquire has said it waits on one of
// the server's keys: it marked a lock's hold (a string whose 27th and last
// character is "!": see redislock's acquire.lua) or set a waiter flag (a
// hold it cannot mark).
func WaitedOn(ctx context.Context, client redis.Cmdable) bool {
	keys, err := client.Keys(ctx, "*").Result()
	if err != nil {
		return false
	}
	for _, k := range keys {
		if strings.Contains(k, "zerolock.waiting") {
			return true
		}
		if v, err := client.Get(ctx, k).Result(); err == nil && len(v) == 27 && strings.HasSuffix(v, "!") {
			return true
		}
	}
	return false
}
