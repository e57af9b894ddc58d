package torture

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock"
)

// runChild runs the role of a re-executed test binary and returns its exit
// code. Parameters arrive in the environment; results leave on stdout.
func runChild(role string) int {
	client := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR"), PoolSize: 64})
	defer client.Close()
	run, ok := childRoles[role]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown role", role)
		return 2
	}
	return run(client)
}

// childRoles are the roles a re-executed test binary can play. A test file
// adds its own in an init function.
var childRoles = map[string]func(*redis.Client) int{
	"exclusion": exclusionChild,
	"holder":    holderChild,
}

// exclusionChild runs goroutines that each take the lock, read the shared
// counter, sleep 0-1 ms, write it back plus one, and release, until the
// deadline or the target count. It prints its acquisitions and any overlap
// of hold intervals it saw on its own monotonic clock. With CALL_TIMEOUT,
// each acquire and release gets a context with that timeout, the locks are
// made WithDeadlineGuard, and it also prints the longest time a call took
// past its deadline.
func exclusionChild(client *redis.Client) int {
	goroutines, _ := strconv.Atoi(os.Getenv("GOROUTINES"))
	target, _ := strconv.ParseInt(os.Getenv("TARGET"), 10, 64)
	duration, _ := time.ParseDuration(os.Getenv("DURATION"))
	callTimeout, _ := time.ParseDuration(os.Getenv("CALL_TIMEOUT"))
	key, counter := os.Getenv("KEY"), os.Getenv("COUNTER")
	deadline := time.Now().Add(duration)
	type interval struct{ from, to time.Duration }
	var (
		acquired atomic.Int64
		errs     atomic.Int64
		overrun  atomic.Int64 // longest time past a call's deadline
		mu       sync.Mutex
		spans    []interval
		wg       sync.WaitGroup
	)
	// bounded runs one lock call under CALL_TIMEOUT, noting any overrun.
	bounded := func(call func(context.Context) (bool, error)) (bool, error) {
		if callTimeout == 0 {
			return call(context.Background())
		}
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		start := time.Now()
		ok, err := call(ctx)
		late := int64(time.Since(start) - callTimeout)
		for cur := overrun.Load(); late > cur && !overrun.CompareAndSwap(cur, late); cur = overrun.Load() {
		}
		return ok, err
	}
	ctx := context.Background()
	epoch := time.Now()
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			opts := []redislock.Option{redislock.WithExpiry(5 * time.Second)}
			if callTimeout > 0 {
				opts = append(opts, redislock.WithDeadlineGuard())
			}
			lock := redislock.New(client, key, opts...)
			for time.Now().Before(deadline) && (target == 0 || acquired.Load() < target) {
				ok, err := bounded(func(ctx context.Context) (bool, error) { return lock.AcquireWaitCtx(ctx, time.Second) })
				if err != nil {
					errs.Add(1)
					continue
				}
				if !ok {
					continue
				}
				from := time.Since(epoch)
				v, _ := client.Get(ctx, counter).Int64()
				time.Sleep(time.Duration(rand.N(1000)) * time.Microsecond)
				client.Set(ctx, counter, v+1, 0)
				to := time.Since(epoch)
				acquired.Add(1)
				mu.Lock()
				spans = append(spans, interval{from, to})
				mu.Unlock()
				if _, err := bounded(lock.ReleaseCtx); err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	overlaps := 0
	for i := 1; i < len(spans); i++ {
		if spans[i].from < spans[i-1].to {
			overlaps++
		}
	}
	fmt.Printf("acquired %d overlaps %d errors %d overrun %d\n", acquired.Load(), overlaps, errs.Load(), overrun.Load())
	return 0
}

// holderChild takes the lock (2 s, watched when WATCH=1), prints "held",
// and waits to be killed.
func holderChild(client *redis.Client) int {
	lock := redislock.New(client, os.Getenv("KEY"),
		redislock.WithExpiry(2*time.Second), redislock.WithTolerance(0))
	ok, err := lock.Acquire()
	if !ok || err != nil {
		fmt.Printf("failed %v %v\n", ok, err)
		return 1
	}
	if os.Getenv("WATCH") == "1" {
		lock.Watch(context.Background(), zerolock.RenewEvery(500*time.Millisecond))
	}
	fmt.Println("held")
	time.Sleep(time.Minute)
	return 0
}

// child starts this test binary in a role; the caller reads its stdout.
func child(role string, env ...string) (*exec.Cmd, *bufio.Scanner, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), childEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	return cmd, bufio.NewScanner(out), nil
}
