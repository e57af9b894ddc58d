package main

import (
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// The targets' comparisons: zerolock's lock on go-zero's store (the
// drop-in) against go-zero's own RedisLock, and zerolock on go-redis with
// default options and WithoutWakeups against the raw floor.
const (
	dropIn       = "zerolock on go-zero"
	replaced     = "go-zero RedisLock"
	rawFloor     = "floor (SET NX + EVALSHA)"
	onGoRedis    = "zerolock on go-redis"
	quietOnRedis = "zerolock on go-redis, WithoutWakeups"
)

// pairings are the paired comparisons: contender, then baseline.
var pairings = [][2]string{
	{dropIn, replaced},
	{onGoRedis, rawFloor},
	{quietOnRedis, rawFloor},
}

// pairsPerRound is how many back-to-back pairs each round runs per pairing
// and scenario, each run half a round's length.
const pairsPerRound = 3

// runPairs measures each pairing in pairs of runs back to back, the order
// alternating from pair to pair (AB, BA, ...), so that each pair's ratio
// compares runs moments apart and a drift within a pair favours neither.
// The main table's rows run up to a whole rotation of seven contenders
// apart, and on a shared machine the rate moves by 10-20 % from one second
// to the next, more than the few per cent the targets are about.
func runPairs(cl clients, admin *redis.Client, rep *report, round int, d time.Duration) {
	byName := map[string]cycleContender{}
	for _, c := range cycleContenders {
		byName[c.name] = c
	}
	half := d / 2
	for _, sc := range scenarios {
		if !selected(sc.name) {
			continue
		}
		for pi, pg := range pairings {
			for p := 0; p < pairsPerRound; p++ {
				n := round*pairsPerRound + p
				order := [2]int{0, 1}
				if n%2 == 1 {
					order = [2]int{1, 0}
				}
				var got [2]sample
				for _, i := range order {
					// Keys of their own, apart from every other run's (the
					// floor is in two pairings): a run cut off at its end may
					// leave a key held until its expiry.
					got[i] = runCycles(cl, admin, byName[pg[i]], sc, 10000*(pi+1)+n, half)
				}
				rep.addPair(sc.name, pg, got[0], got[1])
				fmt.Fprintf(os.Stderr, "round %d  %-34s pair %d: %s %.0f vs %s %.0f op/s\n",
					round+1, sc.name, p+1, pg[0], got[0].ops, pg[1], got[1].ops)
			}
		}
	}
}
