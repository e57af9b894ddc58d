package main

import (
	"math"
	"testing"
)

// TestSliceLogRatios: a side that runs at 0.9 of the other's rate measures
// 0.9 whichever way the machine's speed drifts, and the first slice, where
// the goroutines start, is left out.
func TestSliceLogRatios(t *testing.T) {
	var counts []int64
	for s := range 40 {
		rate := 1000.0 + 30*float64(s) // the machine speeds up
		if s%2 == 0 {
			rate *= 0.9
		}
		if s == 0 {
			rate = 1 // starting
		}
		counts = append(counts, int64(math.Round(rate)))
	}
	logs := sliceLogRatios(counts)
	if len(logs) != 19 {
		t.Fatalf("%d ratios from 40 slices, want 19 (slices 2, 4, ... 38)", len(logs))
	}
	mean, se := meanSE(logs)
	if got := math.Exp(mean); math.Abs(got-0.9) > 0.002 || se > 0.001 {
		t.Fatalf("ratio %.4f (se %.4f), want 0.900", got, se)
	}
}
