package main

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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
	ops      float64 // operations (acquire tries, with the release when acquired) per second
	usecOp   float64 // Redis CPU per operation, from INFO commandstats
	errors   int64
	firstErr error
}

// runCycles runs c's cyclers for d and measures them.
func runCycles(cl clients, admin *redis.Client, c cycleContender, sc scenario, round int, d time.Duration) sample {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	before := serverUsec(admin)
	var (
		ops, errs atomic.Int64
		wg        sync.WaitGroup
		mu        sync.Mutex
		first     error
	)
	start := time.Now()
	for g := 0; g < sc.goroutines; g++ {
		key := fmt.Sprintf("bench:%s:%d:%s", strings.ReplaceAll(c.name, " ", ""), round, strconv.Itoa(g))
		if sc.sameKey {
			key = fmt.Sprintf("bench:%s:%d:contended", strings.ReplaceAll(c.name, " ", ""), round)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			cy := c.new(cl, key)
			for ctx.Err() == nil {
				_, err := cy.cycle(ctx)
				if err != nil && ctx.Err() == nil {
					errs.Add(1)
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					continue
				}
				ops.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	after := serverUsec(admin)
	n := ops.Load()
	s := sample{ops: float64(n) / elapsed.Seconds(), errors: errs.Load(), firstErr: first}
	if n > 0 {
		s.usecOp = (after - before) / float64(n)
	}
	return s
}

// serverUsec is the CPU time Redis spent in commands, from INFO
// commandstats (microseconds per call times calls), leaving out INFO.
func serverUsec(admin *redis.Client) float64 {
	info, err := admin.Info(context.Background(), "commandstats").Result()
	if err != nil {
		return 0
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		name, stats, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" {
			continue
		}
		for _, field := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(field, "usec="); ok {
				u, _ := strconv.ParseFloat(v, 64)
				total += u
			}
		}
	}
	return total
}

// median of xs (xs is reordered).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	sort.Float64s(xs)
	return xs[len(xs)/2]
}
