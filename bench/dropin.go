package main

import (
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// dropInPairs is how many back-to-back pairs of the drop-in and what it
// replaces each round runs per scenario, each run half a round's length.
const dropInPairs = 3

// runDropIn measures the drop-in (zerolock's lock on go-zero's store)
// against go-zero's own RedisLock in pairs of runs back to back, the order
// alternating from pair to pair (AB, BA, ...), so that each pair's ratio
// compares runs moments apart and a drift within a pair favours neither.
// The main table's rows run a whole rotation of contenders apart, and on
// a shared machine the rate moves by more than the few per cent between
// the two locks from one second to the next.
func runDropIn(cl clients, admin *redis.Client, rep *report, round int, d time.Duration) {
	var ours, theirs cycleContender
	for _, c := range cycleContenders {
		switch c.name {
		case dropIn:
			ours = c
		case replaced:
			theirs = c
		}
	}
	half := d / 2
	for _, sc := range scenarios {
		for p := 0; p < dropInPairs; p++ {
			pair := [2]cycleContender{ours, theirs}
			if (round*dropInPairs+p)%2 == 1 {
				pair[0], pair[1] = theirs, ours
			}
			var got [2]sample
			for i, c := range pair {
				// Keys of their own: a run cut off at its end may leave a key held.
				got[i] = runCycles(cl, admin, c, sc, 10000+round*dropInPairs+p, half)
			}
			if pair[0].name != dropIn {
				got[0], got[1] = got[1], got[0]
			}
			rep.addPair(sc.name, got[0], got[1])
			fmt.Fprintf(os.Stderr, "round %d  %-34s drop-in pair %d: %9.0f vs %9.0f op/s\n",
				round+1, sc.name, p+1, got[0].ops, got[1].ops)
		}
	}
}
