package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// interleaveSlice is how long each side of an interleaved pairing runs
// before the other takes over: short enough that the machine's speed,
// which drifts by 10-20 % over seconds on a shared VM, is nearly the same
// for a slice and its neighbours.
const interleaveSlice = 100 * time.Millisecond

// runInterleaved measures each pairing (contender, then baseline) in one
// process with every goroutine switching from one to the other every
// interleaveSlice, for d in each order (contender first, then baseline
// first), and prints the contender's rate over the baseline's (the
// geometric mean, over slices, of a slice's count over the mean of its two
// neighbours', the orders combined) with its standard error, and each
// side's client CPU (getrusage) and Redis CPU (INFO cpu) per cycle. Runs
// of separate processes, as peerbench's, move by several per cent from
// one to the next; this resolves about one.
func runInterleaved(cl clients, admin *redis.Client, sc scenario, d time.Duration) {
	byName := map[string]cycleContender{}
	for _, c := range cycleContenders {
		byName[c.name] = c
	}
	for pi, pg := range pairings {
		var logs []float64
		var client, server [2]float64 // CPU µs per cycle, summed over both orders
		for order := range 2 {
			first, second := byName[pg[order]], byName[pg[1-order]]
			r := interleave(cl, admin, sc, [2]cycleContender{first, second}, fmt.Sprintf("i%d%d", pi, order), d)
			for _, l := range r.logRatios {
				if order == 1 {
					l = -l // baseline over contender: inverted
				}
				logs = append(logs, l)
			}
			for side := range 2 {
				i := side ^ order // the contender is side 0 of the sums
				client[i] += r.clientUs[side] / 2
				server[i] += r.redisUs[side] / 2
			}
		}
		mean, se := meanSE(logs)
		// Neighbouring ratios share a slice of the other side, which
		// meanSE takes for independent: about 4/3 of its variance.
		se *= math.Sqrt(4.0 / 3)
		fmt.Printf("%s, interleaved every %v, %v per order: %s / %s = %.3f (±%.3f); CPU per cycle, client %.2f against %.2f µs, Redis %.2f against %.2f µs\n",
			sc.name, interleaveSlice, d, pg[0], pg[1], math.Exp(mean), math.Exp(mean)*se,
			client[0], client[1], server[0], server[1])
	}
}

// interleaved is one interleaved run: the log of each of the first side's
// slices over its neighbours, and each side's CPU per cycle.
type interleaved struct {
	logRatios         []float64
	clientUs, redisUs [2]float64
}

// interleave runs the two contenders alternately, the first from the first
// slice, for d in all, on keys under prefix.
func interleave(cl clients, admin *redis.Client, sc scenario, pair [2]cycleContender, prefix string, d time.Duration) interleaved {
	slices := int(d / interleaveSlice)
	counts := make([]atomic.Int64, slices)
	var clientCPU, redisCPU [2]float64
	start := time.Now()
	var wg sync.WaitGroup
	for g := range sc.goroutines {
		var cyclers [2]cycler
		for side := range 2 {
			key := keyFor(sc.name+":"+prefix+":"+strings.ReplaceAll(pair[side].name, " ", ""), g)
			if sc.sameKey {
				key = keyFor(sc.name+":"+prefix+":"+strings.ReplaceAll(pair[side].name, " ", ""), 0)
			}
			cyclers[side] = pair[side].new(cl, key)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			for {
				slice := int(time.Since(start) / interleaveSlice)
				if slice >= slices {
					return
				}
				if ok, err := cyclers[slice%2].cycle(ctx); ok && err == nil {
					counts[slice].Add(1)
				}
			}
		}()
	}
	// CPU at every slice's end, charged to the side that ran it.
	prevC, prevR := processCPU(), serverCPU(admin)
	for slice := 1; slice <= slices; slice++ {
		time.Sleep(time.Until(start.Add(time.Duration(slice) * interleaveSlice)))
		c, r := processCPU(), serverCPU(admin)
		clientCPU[(slice-1)%2] += c - prevC
		redisCPU[(slice-1)%2] += r - prevR
		prevC, prevR = c, r
	}
	wg.Wait()
	n := make([]int64, slices)
	var cycles [2]float64
	for s := range slices {
		n[s] = counts[s].Load()
		cycles[s%2] += float64(n[s])
	}
	res := interleaved{logRatios: sliceLogRatios(n)}
	for side := range 2 {
		if cycles[side] > 0 {
			res.clientUs[side] = clientCPU[side] / cycles[side] * 1e6
			res.redisUs[side] = redisCPU[side] / cycles[side] * 1e6
		}
	}
	return res
}

// sliceLogRatios is, for each of the first side's slices (the even ones)
// that has a neighbour on each side, the log of its count over the mean of
// its neighbours'. The first slice is left out: the goroutines start in it.
func sliceLogRatios(counts []int64) []float64 {
	var logs []float64
	for s := 2; s+1 < len(counts); s += 2 {
		a := float64(counts[s])
		b := float64(counts[s-1]+counts[s+1]) / 2
		if a > 0 && b > 0 {
			logs = append(logs, math.Log(a/b))
		}
	}
	return logs
}

// meanSE is the mean of xs and its standard error.
func meanSE(xs []float64) (mean, se float64) {
	if len(xs) < 2 {
		return 0, 0
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
}

// processCPU is this process's user and system CPU so far, in seconds.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// serverCPU is the Redis server's user and system CPU so far, in seconds,
// from INFO cpu.
func serverCPU(admin *redis.Client) float64 {
	info, err := admin.Info(context.Background(), "cpu").Result()
	if err != nil {
		return 0
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		name, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (name == "used_cpu_sys" || name == "used_cpu_user") {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}
