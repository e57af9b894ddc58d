package torture

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

func init() {
	childRoles["semaphore"] = semaphoreChild
}

// semaphorePermits is the number of permits of the torture's semaphore.
const semaphorePermits = 3

// semaphoreChild runs goroutines that each, with a Semaphore of their own,
// wait for a permit (AcquireWaitCtx, 1 s), INCR the shared in-use counter,
// note a violation when it exceeds the permits, DECR it and release, until
// the deadline or the target count. It prints its acquisitions, the
// violations, the errors, the waits that ended without a permit, and the
// highest in-use count it saw.
func semaphoreChild(client *redis.Client) int {
	goroutines, _ := strconv.Atoi(os.Getenv("GOROUTINES"))
	target, _ := strconv.ParseInt(os.Getenv("TARGET"), 10, 64)
	duration, _ := time.ParseDuration(os.Getenv("DURATION"))
	key, counter := os.Getenv("KEY"), os.Getenv("COUNTER")
	deadline := time.Now().Add(duration)
	var (
		acquired, violations, errs, timeouts, most atomic.Int64
		wg                                         sync.WaitGroup
	)
	ctx := context.Background()
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := redislock.NewSemaphore(client, key, semaphorePermits, redislock.WithExpiry(5*time.Second))
			if err != nil {
				errs.Add(1)
				return
			}
			for time.Now().Before(deadline) && (target == 0 || acquired.Load() < target) {
				ok, err := s.AcquireWaitCtx(ctx, time.Second)
				switch {
				case err != nil:
					errs.Add(1)
					continue
				case !ok:
					timeouts.Add(1)
					continue
				}
				n, err := client.Incr(ctx, counter).Result()
				if err != nil {
					errs.Add(1)
				} else {
					if n > semaphorePermits {
						violations.Add(1)
					}
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					if err := client.Decr(ctx, counter).Err(); err != nil {
						errs.Add(1)
					}
				}
				acquired.Add(1)
				if ok, err := s.ReleaseCtx(ctx); !ok || err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("acquired %d violations %d errors %d timeouts %d most %d\n",
		acquired.Load(), violations.Load(), errs.Load(), timeouts.Load(), most.Load())
	return 0
}

// semaphoreRun is what the processes of the semaphore workload reported.
type semaphoreRun struct {
	acquired, violations, errors, timeouts, most int64
	took                                         time.Duration
}

// TestSemaphoreAcrossProcesses: 3 OS processes x 20 goroutines share one
// 3-permit semaphore; every holder INCRs a Redis in-use counter and DECRs
// it before releasing. Pass: the counter never exceeded 3, it reached 3,
// no call failed, and (in the long run) at least 50,000 acquisitions.
func TestSemaphoreAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	const processes, goroutines = 3, 20
	duration, target := 3*time.Second, int64(0)
	if long() {
		duration, target = 60*time.Second, 17000 // >= 51,000 in all, bounded by a minute
	}
	key := "torture:" + t.Name()
	env := []string{"REDIS_ADDR=" + srv.Addr(), "KEY=" + key, "COUNTER=" + key + ":in-use",
		fmt.Sprintf("GOROUTINES=%d", goroutines), "DURATION=" + duration.String(), fmt.Sprintf("TARGET=%d", target)}
	start := time.Now()
	results := make(chan semaphoreRun, processes)
	for range processes {
		cmd, out, err := child("semaphore", env...)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			var r semaphoreRun
			for out.Scan() {
				fmt.Sscanf(out.Text(), "acquired %d violations %d errors %d timeouts %d most %d",
					&r.acquired, &r.violations, &r.errors, &r.timeouts, &r.most)
			}
			_ = cmd.Wait()
			results <- r
		}()
	}
	var total semaphoreRun
	for range processes {
		r := <-results
		total.acquired += r.acquired
		total.violations += r.violations
		total.errors += r.errors
		total.timeouts += r.timeouts
		total.most = max(total.most, r.most)
	}
	total.took = time.Since(start)
	if total.violations != 0 {
		t.Errorf("%d times more than %d holders were inside", total.violations, semaphorePermits)
	}
	if total.most != semaphorePermits {
		t.Errorf("at most %d holders inside at once; want the %d permits reached", total.most, semaphorePermits)
	}
	if total.errors != 0 {
		t.Errorf("%d calls failed on a healthy server", total.errors)
	}
	if long() && total.acquired < processes*target {
		t.Errorf("%d acquisitions in %v; want at least %d", total.acquired, total.took.Round(time.Second), processes*target)
	}
	if total.acquired == 0 {
		t.Error("no acquisition")
	}
	record(t, fmt.Sprintf("%d processes x %d goroutines, one %d-permit Semaphore, AcquireWait; each holder INCRs a Redis in-use counter, checks it, DECRs",
		processes, goroutines, semaphorePermits),
		fmt.Sprintf("%d acquisitions in %v (%.0f/s), at most %d inside at once, %d violations, %d errors, %d waits of 1 s ended without a permit",
			total.acquired, total.took.Round(100*time.Millisecond), float64(total.acquired)/total.took.Seconds(),
			total.most, total.violations, total.errors, total.timeouts))
}
