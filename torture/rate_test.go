package torture

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

func init() {
	childRoles["rate"] = rateChild
}

// serverNowKey carries, in a Rate call's context, where the hook of
// rateChild writes the server's clock from the script's reply.
type serverNowKey struct{}

// serverNowHook copies the last element of a rate script's reply (its
// five integers end with the server's now in µs, the time the admission
// is logged at) into the *int64 the command's context carries. Rate does
// not return that time; redislock's own checkRateExact reads the same
// element through the test-only RateAt.
type serverNowHook struct{}

func (serverNowHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (serverNowHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (serverNowHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		slot, _ := ctx.Value(serverNowKey{}).(*int64)
		c, ok := cmd.(*redis.Cmd)
		if slot == nil || !ok || err != nil {
			return err
		}
		if vals, ok := c.Val().([]any); ok && len(vals) == 5 {
			if now, ok := vals[4].(int64); ok {
				*slot = now
			}
		}
		return err
	}
}

// rateChild runs GOROUTINES goroutines that each call Rate on KEY
// (QUOTA per PERIOD) back to back for DURATION, on REDIS_ADDR or, with
// CLUSTER_ADDRS, on that Redis Cluster. It prints "a <µs>" for each
// admission and "r <µs> <Retry-After µs>" for each refusal, at the
// server's time from the script's reply, then "done <errors> <skew µs>", skew being this
// process's client clock less the server's at its first reply.
// CLOCK_OFFSET shifts every client-side time the child uses (its clock
// and so its deadline): the library takes none, so the offset must not
// change what is admitted.
func rateChild(client *redis.Client) int {
	goroutines, _ := strconv.Atoi(os.Getenv("GOROUTINES"))
	quota, _ := strconv.Atoi(os.Getenv("QUOTA"))
	period, _ := time.ParseDuration(os.Getenv("PERIOD"))
	duration, _ := time.ParseDuration(os.Getenv("DURATION"))
	offset, _ := time.ParseDuration(os.Getenv("CLOCK_OFFSET"))
	key := os.Getenv("KEY")
	clock := func() time.Time { return time.Now().Add(offset) }

	var store redislock.Store = client
	if addrs := os.Getenv("CLUSTER_ADDRS"); addrs != "" {
		cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), PoolSize: 64})
		defer cc.Close()
		cc.AddHook(serverNowHook{})
		store = cc
	} else {
		client.AddHook(serverNowHook{})
	}
	backend := redislock.NewBackend(store).(zerolock.RateBackend)

	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs atomic.Int64
		skew atomic.Int64
		once sync.Once
	)
	deadline := clock().Add(duration)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lines []byte
			for clock().Before(deadline) {
				var now int64
				ctx := context.WithValue(context.Background(), serverNowKey{}, &now)
				r, err := backend.Rate(ctx, key, quota, period)
				// A reply the hook did not see would have no server time
				// to check; count it with the errors, which fail the test.
				if err != nil || now == 0 {
					errs.Add(1)
					continue
				}
				once.Do(func() { skew.Store(clock().UnixMicro() - now) })
				tag := byte('r')
				if r.Admitted {
					tag = 'a'
				}
				lines = append(lines, tag, ' ')
				lines = strconv.AppendInt(lines, now, 10)
				if !r.Admitted {
					lines = append(lines, ' ')
					lines = strconv.AppendInt(lines, r.RetryAfter.Microseconds(), 10)
				}
				lines = append(lines, '\n')
			}
			mu.Lock()
			out.Write(lines)
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Fprintf(out, "done %d %d\n", errs.Load(), skew.Load())
	out.Flush()
	return 0
}

// rateRun is what the processes of one run reported, merged.
type rateRun struct {
	admitted []int64   // server µs, sorted
	refused  []refusal // by server time
	perChild []int     // admissions of each process, in start order
	skews    []int64   // each process's client clock less the server's, µs, in start order
	errors   int64
}

// runRateProcesses starts processes children in the rate role against
// key, the first with CLOCK_OFFSET=offset, and merges what they report.
func runRateProcesses(t *testing.T, processes int, env []string, offset time.Duration) rateRun {
	t.Helper()
	type report struct {
		admitted     []int64
		refused      []refusal
		errors, skew int64
		done         bool
		index        int
	}
	reports := make(chan report, processes)
	for p := range processes {
		childEnv := slices.Clone(env)
		if p == 0 {
			childEnv = append(childEnv, "CLOCK_OFFSET="+offset.String())
		}
		cmd, out, err := child("rate", childEnv...)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			r := report{index: p}
			for out.Scan() {
				line := out.Text()
				switch {
				case strings.HasPrefix(line, "a "):
					n, _ := strconv.ParseInt(line[2:], 10, 64)
					r.admitted = append(r.admitted, n)
				case strings.HasPrefix(line, "r "):
					var f refusal
					fmt.Sscanf(line, "r %d %d", &f.at, &f.retryAfter)
					r.refused = append(r.refused, f)
				case strings.HasPrefix(line, "done "):
					fmt.Sscanf(line, "done %d %d", &r.errors, &r.skew)
					r.done = true
				}
			}
			_ = cmd.Wait()
			reports <- r
		}()
	}
	run := rateRun{perChild: make([]int, processes), skews: make([]int64, processes)}
	for range processes {
		r := <-reports
		if !r.done {
			t.Errorf("a rate process ended without its summary")
		}
		run.admitted = append(run.admitted, r.admitted...)
		run.refused = append(run.refused, r.refused...)
		run.perChild[r.index] = len(r.admitted)
		run.skews[r.index] = r.skew
		run.errors += r.errors
	}
	slices.Sort(run.admitted)
	slices.SortFunc(run.refused, func(a, b refusal) int { return cmp.Compare(a.at, b.at) })
	return run
}

// A refusal is a refused request's server time and the Retry-After it
// was given, in µs.
type refusal struct{ at, retryAfter int64 }

// checkRateRun holds run to the sliding log's promise: no Period-long
// window of the server's clock holds more than quota admissions, every
// refusal had quota admissions in the Period before it and a Retry-After
// exactly until the model frees a place, and the key was
// saturated (refusals seen, and admissions at least 90% of quota per
// period over the span from the first admission to the last count). It
// returns the figures for the report.
func checkRateRun(t *testing.T, run rateRun, quota int, period time.Duration) string {
	t.Helper()
	p := period.Microseconds()
	times := run.admitted
	if run.errors != 0 {
		t.Errorf("%d Rate calls failed", run.errors)
	}
	if len(times) == 0 {
		t.Fatal("nothing admitted")
	}
	worst := 0 // most admissions seen in one Period-long window
	for i, j := 0, 0; j < len(times); j++ {
		for times[j]-times[i] >= p {
			i++
		}
		worst = max(worst, j-i+1)
	}
	if worst > quota {
		t.Errorf("%d admissions within one %v window: more than the quota %d", worst, period, quota)
	}
	unjustified, wrongWait := 0, 0
	for _, f := range run.refused {
		lo, _ := slices.BinarySearch(times, f.at-p+1)
		hi, _ := slices.BinarySearch(times, f.at+1)
		if hi-lo < quota {
			unjustified++
			continue
		}
		// Retry-After is exactly when the reference model frees a place:
		// the quota-th newest admission in the window leaves it, so a
		// client that waits it is admitted unless another takes the
		// place first; neither sooner (a refusal again) nor later.
		if want := times[hi-quota] + p - f.at; f.retryAfter != want {
			if wrongWait == 0 {
				t.Errorf("a refusal at %d µs said Retry-After %d µs; the merged log frees a place in %d µs",
					f.at, f.retryAfter, want)
			}
			wrongWait++
		}
	}
	if unjustified != 0 {
		t.Errorf("%d refusals with fewer than %d admissions in the %v before them", unjustified, quota, period)
	}
	if wrongWait != 0 {
		t.Errorf("%d refusals whose Retry-After is not when the merged log frees a place", wrongWait)
	}
	last := times[len(times)-1]
	if n := len(run.refused); n > 0 {
		last = max(last, run.refused[n-1].at)
	}
	span := last - times[0]
	ideal := float64(quota) * float64(span) / float64(p)
	ratio := float64(len(times)) / ideal
	if len(run.refused) == 0 || ratio < 0.9 {
		t.Errorf("%d admitted, %d refused, %.0f%% of %d per %v over %v: the key was not saturated",
			len(times), len(run.refused), 100*ratio, quota, period, time.Duration(span)*time.Microsecond)
	}
	// A sliding log admits at most quota × (⌊span/period⌋ + 1) in span.
	most := quota * int(span/p+1)
	return fmt.Sprintf("%d counts: %d admitted of the %d the bound allows over %v (%.1f%% of quota × span/period; per process %v), "+
		"%d refused (%d unjustified, %d with a Retry-After other than the model's), most in one window %d, client-less-server clock per process %v µs, %d errors",
		len(times)+len(run.refused), len(times), most, (time.Duration(span) * time.Microsecond).Round(time.Millisecond), 100*ratio,
		run.perChild, len(run.refused), unjustified, wrongWait, worst, run.skews, run.errors)
}

// TestRateExactAcrossProcesses: 3 OS processes × 8 goroutines call Rate on
// one key (20 per 200ms) back to back for 3 s (30 s under make torture),
// on a redis-server and on the Redis Cluster. Each process reports every
// answer at the server's time the script returned (read from its reply by
// a go-redis hook: Rate does not expose it), so the merged check needs no
// tolerance for round trips or clocks: no 200ms window holds more than 20
// admissions, every refusal had 20 in the 200ms before it and a Retry-After
// exactly until the merged log frees a place (so a client that waits it is
// admitted unless another takes the place first), and the
// admissions come to at least 90% of 20 per 200ms (saturation). The first
// process runs with its client clock 5 s ahead (CLOCK_OFFSET, applied to
// every time the child reads): the library takes no client time, so the
// merged result holds the bound as one process's would, the offset
// process gets between half and one and a half times a third of the
// admissions, and the skews reported show the offset was applied.
func TestRateExactAcrossProcesses(t *testing.T) {
	const processes, goroutines, quota, period, offset = 3, 8, 20, 200 * time.Millisecond, 5 * time.Second
	duration := 3 * time.Second
	if long() {
		duration = 30 * time.Second
	}
	env := func(t *testing.T) []string {
		return []string{"KEY=torture:{" + t.Name() + "}", fmt.Sprintf("GOROUTINES=%d", goroutines),
			fmt.Sprintf("QUOTA=%d", quota), "PERIOD=" + period.String(), "DURATION=" + duration.String()}
	}
	params := fmt.Sprintf("%d processes × %d goroutines, one key, %d per %v, %v, the first process's clock +%v",
		processes, goroutines, quota, period, duration, offset)
	check := func(t *testing.T, run rateRun) {
		figures := checkRateRun(t, run, quota, period)
		if d := run.skews[0] - slices.Max(run.skews[1:]); d < (offset - time.Second).Microseconds() {
			t.Errorf("the offset process's clock is %v ahead of the others, want about %v: CLOCK_OFFSET was not applied",
				time.Duration(d)*time.Microsecond, offset)
		}
		// As one of the three, the offset process gets about a third of
		// the admissions: its clock neither starves nor favours it.
		fair := float64(len(run.admitted)) / processes
		if got := float64(run.perChild[0]); got < fair/2 || got > fair*3/2 {
			t.Errorf("the offset process was admitted %v times of %d, far from a third: its clock changed what it was admitted",
				got, len(run.admitted))
		}
		record(t, params, figures)
	}
	t.Run("redis-server", func(t *testing.T) {
		srv := redistest.Start(t)
		check(t, runRateProcesses(t, processes, append(env(t), "REDIS_ADDR="+srv.Addr()), offset))
	})
	t.Run("cluster", func(t *testing.T) {
		c := redistest.SharedCluster(t)
		check(t, runRateProcesses(t, processes, append(env(t), "CLUSTER_ADDRS="+strings.Join(c.Addrs(), ",")), offset))
	})
}
