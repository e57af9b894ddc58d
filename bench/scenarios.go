package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A scenario is a workload every cycle contender runs.
type scenario struct {
	name       string
	goroutines int
	sameKey    bool // one contended key, tried once per operation
}

var scenarios = []scenario{
	{"distinct keys, 1 goroutine", 1, false},
	{"distinct keys, 50 goroutines", 50, false},
	{"one key, try-lock, 50 goroutines", 50, true},
}

// sample is one contender's run of one scenario.
type sample struct {
	count    int64              // operations completed
	ops      float64            // operations (acquire tries, with the release when acquired) per second
	usecOp   float64            // Redis CPU per operation, from INFO commandstats
	usecCmd  map[string]float64 // usecOp by command (set, evalsha, ...)
	errors   int64
	firstErr error
}

// runCycles runs c's cyclers for d and measures them, with the Redis CPU
// they cost.
func runCycles(cl clients, admin *redis.Client, c cycleContender, sc scenario, round int, d time.Duration) sample {
	// The scenario and round in every key: a run's in-flight cycle cut off
	// by its deadline may leave its key held until expiry, and another run
	// on that key would measure refusals.
	prefix := fmt.Sprintf("bench:%s:%s:%d:", strings.ReplaceAll(sc.name, " ", ""), strings.ReplaceAll(c.name, " ", ""), round)
	before := commandUsec(admin)
	s := drive(sc.goroutines, d, func(g int) func(context.Context) error {
		key := prefix + strconv.Itoa(g)
		if sc.sameKey {
			key = prefix + "contended"
		}
		cy := c.new(cl, key)
		return func(ctx context.Context) error {
			_, err := cy.cycle(ctx)
			return err
		}
	})
	if s.count > 0 {
		s.usecCmd = map[string]float64{}
		for name, usec := range commandUsec(admin) {
			if d := usec - before[name]; d > 0 {
				s.usecCmd[name] = d / float64(s.count)
				s.usecOp += d / float64(s.count)
			}
		}
	}
	return s
}

// commandUsec is the CPU time Redis spent in each command so far, from
// INFO commandstats (microseconds per call times calls), leaving out INFO.
func commandUsec(admin *redis.Client) map[string]float64 {
	usec := map[string]float64{}
	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return usec
	}
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		for _, field := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(field, "usec="); ok {
				u, _ := strconv.ParseFloat(v, 64)
				usec[strings.TrimPrefix(name, "cmdstat_")] += u
			}
		}
	}
	return usec
}

// median of xs (xs is reordered).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	return xs[len(xs)/2]
}
