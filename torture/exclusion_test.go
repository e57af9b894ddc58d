package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// exclusionRun is what the processes of one exclusion workload reported.
type exclusionRun struct {
	acquired, overlaps, errors int64
	overrun                    time.Duration // longest call past its deadline
	counter                    int64
	took                       time.Duration
}

// runExclusion runs the workload of test 1 on srv: 3 OS processes x 30
// goroutines on one key; the critical section reads a Redis counter, sleeps
// 0-1 ms and writes it back plus one. extra adds to the children's
// environment.
func runExclusion(t *testing.T, srv *redistest.Server, duration time.Duration, target int64, extra ...string) exclusionRun {
	t.Helper()
	const processes, goroutines = 3, 30
	key := "torture:" + t.Name()
	env := append([]string{"REDIS_ADDR=" + srv.Addr(), "KEY=" + key, "COUNTER=" + key + ":counter",
		fmt.Sprintf("GOROUTINES=%d", goroutines), "DURATION=" + duration.String(), fmt.Sprintf("TARGET=%d", target)}, extra...)
	start := time.Now()
	results := make(chan exclusionRun, processes)
	for p := 0; p < processes; p++ {
		cmd, out, err := child("exclusion", env...)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			var r exclusionRun
			for out.Scan() {
				fmt.Sscanf(out.Text(), "acquired %d overlaps %d errors %d overrun %d", &r.acquired, &r.overlaps, &r.errors, &r.overrun)
			}
			_ = cmd.Wait()
			results <- r
		}()
	}
	var total exclusionRun
	for p := 0; p < processes; p++ {
		r := <-results
		total.acquired += r.acquired
		total.overlaps += r.overlaps
		total.errors += r.errors
		total.overrun = max(total.overrun, r.overrun)
	}
	total.took = time.Since(start)
	counter, err := srv.Client(t).Get(context.Background(), key+":counter").Int64()
	if err != nil {
		t.Fatal(err)
	}
	total.counter = counter
	if counter != total.acquired || total.acquired == 0 {
		t.Errorf("counter %d, acquisitions %d: holders overlapped", counter, total.acquired)
	}
	if total.overlaps != 0 {
		t.Errorf("%d overlapping hold intervals within a process", total.overlaps)
	}
	return total
}

// TestMutualExclusionAcrossProcesses: the final counter must equal the
// acquisitions the processes report (an overlap would lose an increment),
// and no process may see two of its own holds overlap on its monotonic
// clock.
func TestMutualExclusionAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	duration, target := 3*time.Second, int64(0)
	if long() {
		duration, target = 10*time.Minute, 34000 // >= 100k in all
	}
	r := runExclusion(t, srv, duration, target)
	record(t, "3 processes x 30 goroutines, one key, AcquireWait",
		fmt.Sprintf("%d acquisitions in %v, counter %d, %d overlaps, %d errors",
			r.acquired, r.took.Round(time.Second), r.counter, r.overlaps, r.errors))
}

// TestServerStalls runs the workload of test 1 while an admin connection
// stalls the server again and again, alternating CLIENT PAUSE WRITE and
// DEBUG SLEEP for 0.2-2 s. Every acquire and release has a 1 s deadline on
// a default go-redis client (3 s read timeout), with WithDeadlineGuard, so a
// stall outlives many deadlines. Pass: no overlap, the counter exact, and no call returned more
// than 250 ms after its deadline.
func TestServerStalls(t *testing.T) {
	srv := redistest.Start(t, "--enable-debug-command", "local")
	admin := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { _ = admin.Close() })
	duration := 5 * time.Second
	if long() {
		duration = 2 * time.Minute
	}
	const callTimeout, margin = time.Second, 250 * time.Millisecond

	ctx, stop := context.WithCancel(context.Background())
	stalls := make(chan int, 1)
	go func() {
		n := 0
		defer func() { stalls <- n }()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(200+rand.IntN(400)) * time.Millisecond):
			}
			stall := time.Duration(200+rand.IntN(1800)) * time.Millisecond
			var err error
			if i%2 == 0 {
				err = admin.Do(ctx, "client", "pause", stall.Milliseconds(), "write").Err()
			} else {
				err = admin.Do(ctx, "debug", "sleep", fmt.Sprintf("%.3f", stall.Seconds())).Err()
			}
			if err != nil && ctx.Err() == nil {
				t.Errorf("stall %d: %v", i, err)
				return
			}
			n++
		}
	}()
	r := runExclusion(t, srv, duration, 0, "CALL_TIMEOUT="+callTimeout.String())
	stop()
	n := <-stalls
	if n < 3 {
		t.Errorf("only %d stalls during the run", n)
	}
	if r.overrun > margin {
		t.Errorf("a call returned %v after its deadline, margin %v", r.overrun, margin)
	}
	record(t, fmt.Sprintf("test 1's workload for %v with CLIENT PAUSE WRITE and DEBUG SLEEP of 0.2-2 s, alternating; 1 s deadline per call, default go-redis client (3 s read timeout), WithDeadlineGuard", duration),
		fmt.Sprintf("%d stalls, %d acquisitions, counter %d, %d overlaps, %d calls ended by their deadline or an error, longest overrun %v",
			n, r.acquired, r.counter, r.overlaps, r.errors, r.overrun.Round(time.Millisecond)))
}
