package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	childRoles["rwlock"] = rwlockChild
}

// rwlockRun is what the processes of the read-write workload reported.
type rwlockRun struct {
	reads, writes, violations, errors, refused, maxReaders int64
}

// rwlockChild runs goroutines that each, with an RWLock of their own on
// KEY, read (4 in 5) or write, half of each by a single try and half by a
// wait (1 s), until the deadline or the target count. The invariant is
// checked in Redis, where every process sees it: a reader INCRs the
// readers' counter and checks that the writer's marker is absent, then
// DECRs; a writer SETs the marker NX (a second writer finds it set) and
// checks that the counter is 0, then DELs it. It prints its reads, writes,
// violations, errors, refused tries and the most readers it counted.
func rwlockChild(client *redis.Client) int {
	goroutines, _ := strconv.Atoi(os.Getenv("GOROUTINES"))
	target, _ := strconv.ParseInt(os.Getenv("TARGET"), 10, 64)
	duration, _ := time.ParseDuration(os.Getenv("DURATION"))
	key := os.Getenv("KEY")
	readersKey, writerKey := key+":readers-inside", key+":writer-inside"
	deadline := time.Now().Add(duration)
	var (
		reads, writes, violations, errs, refused, most atomic.Int64
		wg                                             sync.WaitGroup
	)
	ctx := context.Background()
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(os.Getpid()), uint64(g)))
			l := redislock.NewRWLock(client, key, redislock.WithExpiry(5*time.Second))
			for time.Now().Before(deadline) && (target == 0 || reads.Load()+writes.Load() < target) {
				write, wait := r.IntN(5) == 0, r.IntN(2) == 0
				var ok bool
				var err error
				switch {
				case write && wait:
					ok, err = l.LockWaitCtx(ctx, time.Second)
				case write:
					ok, err = l.LockCtx(ctx)
				case wait:
					ok, err = l.RLockWaitCtx(ctx, time.Second)
				default:
					ok, err = l.RLockCtx(ctx)
				}
				switch {
				case err != nil:
					errs.Add(1)
					continue
				case !ok:
					refused.Add(1)
					continue
				}
				if write {
					set, err := client.SetNX(ctx, writerKey, 1, 10*time.Second).Result()
					if err != nil {
						errs.Add(1)
					} else if !set {
						violations.Add(1) // a second writer
					}
					if n, err := client.Get(ctx, readersKey).Int64(); err != nil && err != redis.Nil {
						errs.Add(1)
					} else if n > 0 {
						violations.Add(1) // a writer beside readers
					}
					if set {
						if err := client.Del(ctx, writerKey).Err(); err != nil {
							errs.Add(1)
						}
					}
					writes.Add(1)
					ok, err = l.UnlockCtx(ctx)
				} else {
					n, err := client.Incr(ctx, readersKey).Result()
					if err != nil {
						errs.Add(1)
					}
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					if held, err := client.Exists(ctx, writerKey).Result(); err != nil {
						errs.Add(1)
					} else if held != 0 {
						violations.Add(1) // a reader beside a writer
					}
					if err := client.Decr(ctx, readersKey).Err(); err != nil {
						errs.Add(1)
					}
					reads.Add(1)
					ok, err = l.RUnlockCtx(ctx)
				}
				if !ok || err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	fmt.Printf("reads %d writes %d violations %d errors %d refused %d maxreaders %d\n",
		reads.Load(), writes.Load(), violations.Load(), errs.Load(), refused.Load(), most.Load())
	return 0
}

// TestRWLockAcrossProcesses: 3 processes x 20 goroutines on one RWLock
// key, 80% reads and 20% writes, half of them waiting. Pass: no writer
// beside a reader or another writer, as seen in Redis by every process; no
// error; readers did share the lock; in the long version at least 50,000
// holds within a minute.
func TestRWLockAcrossProcesses(t *testing.T) {
	srv := redistest.Start(t)
	const processes, goroutines = 3, 20
	duration, target := 3*time.Second, int64(0)
	if long() {
		duration, target = time.Minute, 17000 // >= 51,000 in all
	}
	key := "torture:" + t.Name()
	env := []string{"REDIS_ADDR=" + srv.Addr(), "KEY=" + key, fmt.Sprintf("GOROUTINES=%d", goroutines),
		"DURATION=" + duration.String(), fmt.Sprintf("TARGET=%d", target)}
	start := time.Now()
	results := make(chan rwlockRun, processes)
	for range processes {
		cmd, out, err := child("rwlock", env...)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			var r rwlockRun
			for out.Scan() {
				fmt.Sscanf(out.Text(), "reads %d writes %d violations %d errors %d refused %d maxreaders %d",
					&r.reads, &r.writes, &r.violations, &r.errors, &r.refused, &r.maxReaders)
			}
			_ = cmd.Wait()
			results <- r
		}()
	}
	var total rwlockRun
	for range processes {
		r := <-results
		total.reads += r.reads
		total.writes += r.writes
		total.violations += r.violations
		total.errors += r.errors
		total.refused += r.refused
		total.maxReaders = max(total.maxReaders, r.maxReaders)
	}
	took := time.Since(start)
	holds := total.reads + total.writes
	switch {
	case total.violations != 0:
		t.Errorf("%d violations: a writer beside a reader or another writer", total.violations)
	case total.errors != 0:
		t.Errorf("%d errors from a healthy server", total.errors)
	case total.reads == 0 || total.writes == 0:
		t.Errorf("%d reads and %d writes: both sides must have run", total.reads, total.writes)
	case total.maxReaders < 2:
		t.Errorf("at most %d reader at once: readers never shared the lock", total.maxReaders)
	case long() && holds < 3*target:
		t.Errorf("%d holds in %v, want %d", holds, took.Round(time.Second), 3*target)
	}
	record(t, fmt.Sprintf("3 processes x %d goroutines, one RWLock key, 80%% reads / 20%% writes, half waiting (1 s); invariant checked in Redis (readers' counter, writer's NX marker)", goroutines),
		fmt.Sprintf("%d holds (%d reads, %d writes) in %v, up to %d readers at once, %d refused tries, %d violations, %d errors",
			holds, total.reads, total.writes, took.Round(time.Second), total.maxReaders, total.refused, total.violations, total.errors))
}
