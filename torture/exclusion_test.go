package torture

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/redistest"
)

// TestMutualExclusionAcrossProcesses: 3 OS processes x 30 goroutines on one
// key; the critical section reads a Redis counter, sleeps 0-1 ms and writes
// it back plus one. The final counter must equal the acquisitions the
// processes report (an overlap would lose an increment), and no process may
// see two of its own holds overlap on its monotonic clock.
func TestMutualExclusionAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	const processes, goroutines = 3, 30
	duration, target := 3*time.Second, int64(0)
	if long() {
		duration, target = 10*time.Minute, 34000 // >= 100k in all
	}
	env := []string{"REDIS_ADDR=" + srv.Addr(), "KEY=torture:exclusion", "COUNTER=torture:counter",
		fmt.Sprintf("GOROUTINES=%d", goroutines), "DURATION=" + duration.String(), fmt.Sprintf("TARGET=%d", target)}
	start := time.Now()
	type result struct{ acquired, overlaps, errors int64 }
	results := make(chan result, processes)
	for p := 0; p < processes; p++ {
		cmd, out, err := child("exclusion", env...)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			var r result
			for out.Scan() {
				fmt.Sscanf(out.Text(), "acquired %d overlaps %d errors %d", &r.acquired, &r.overlaps, &r.errors)
			}
			_ = cmd.Wait()
			results <- r
		}()
	}
	var total result
	for p := 0; p < processes; p++ {
		r := <-results
		total.acquired += r.acquired
		total.overlaps += r.overlaps
		total.errors += r.errors
	}
	counter, err := srv.Client(t).Get(context.Background(), "torture:counter").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if counter != total.acquired || total.acquired == 0 {
		t.Errorf("counter %d, acquisitions %d: holders overlapped", counter, total.acquired)
	}
	if total.overlaps != 0 {
		t.Errorf("%d overlapping hold intervals within a process", total.overlaps)
	}
	record(t, fmt.Sprintf("%d processes x %d goroutines, one key, AcquireWait", processes, goroutines),
		fmt.Sprintf("%d acquisitions in %v, counter %d, %d overlaps, %d errors",
			total.acquired, time.Since(start).Round(time.Second), counter, total.overlaps, total.errors))
}
