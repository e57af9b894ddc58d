package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	rawfloor "github.com/zerolock/zerolock/internal/testing/floor"
	"github.com/zerolock/zerolock/redislock"
)

// A primitiveScenario measures one of the other primitives (semaphore,
// multi-key lock, read-write lock) against its own floor: the fewest round
// trips any implementation needs (internal/testing/floor), 50 goroutines
// on distinct keys, a new primitive per cycle with the default options
// (WithExpiry only), and the plain lock's cycle for reference.
type primitiveScenario struct {
	name       string
	contenders []cycleContender
}

// semPermits is the semaphores' permit count.
const semPermits = 3

// multiKeys are the keys of one multi-lock: three, in one hash slot so the
// multi-lock takes them in one script, as its floor does.
func multiKeys(key string) []string {
	return []string{"{" + key + "}:a", "{" + key + "}:b", "{" + key + "}:c"}
}

var primitiveScenarios = []primitiveScenario{
	{"semaphore (3 permits), distinct keys, 50 goroutines", []cycleContender{
		{"floor (2 round trips)", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				return rawfloor.SemCycle(ctx, c.redis, key, "floor-"+key, semPermits, expiry)
			})
		}},
		{"zerolock on go-redis", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				s := must(redislock.NewSemaphore(c.redis, key, semPermits, redislock.WithExpiry(expiry)))
				return lockCycle(ctx, s.AcquireCtx, s.ReleaseCtx)
			})
		}},
		{"zerolock on go-zero", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				s := must(redislock.NewSemaphore(redislock.GoZeroStore(c.gozero), key, semPermits, redislock.WithExpiry(expiry)))
				return lockCycle(ctx, s.AcquireCtx, s.ReleaseCtx)
			})
		}},
		lockReference,
	}},
	{"multi-key lock (3 keys, one slot), distinct keys, 50 goroutines", []cycleContender{
		{"floor (2 round trips)", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				return rawfloor.MultiCycle(ctx, c.redis, multiKeys(key), "floor-"+key, expiry)
			})
		}},
		{"zerolock on go-redis", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				m := must(redislock.NewMultiLock(c.redis, multiKeys(key), redislock.WithExpiry(expiry)))
				return lockCycle(ctx, m.AcquireCtx, m.ReleaseCtx)
			})
		}},
		{"zerolock on go-zero", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				m := must(redislock.NewMultiLock(redislock.GoZeroStore(c.gozero), multiKeys(key), redislock.WithExpiry(expiry)))
				return lockCycle(ctx, m.AcquireCtx, m.ReleaseCtx)
			})
		}},
		lockReference,
	}},
	{"read-write lock, read, distinct keys, 50 goroutines", []cycleContender{
		{"floor (2 round trips)", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				return rawfloor.ReadCycle(ctx, c.redis, "{"+key+"}", "{"+key+"}:r", "floor-"+key, expiry)
			})
		}},
		{"zerolock on go-redis", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				l := redislock.NewRWLock(c.redis, key, redislock.WithExpiry(expiry))
				return lockCycle(ctx, l.RLockCtx, l.RUnlockCtx)
			})
		}},
		{"zerolock on go-zero", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				l := redislock.NewRWLock(redislock.GoZeroStore(c.gozero), key, redislock.WithExpiry(expiry))
				return lockCycle(ctx, l.RLockCtx, l.RUnlockCtx)
			})
		}},
		lockReference,
	}},
	{"read-write lock, write, distinct keys, 50 goroutines", []cycleContender{
		{"floor (2 round trips)", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				return rawfloor.WriteCycle(ctx, c.redis, "{"+key+"}", "{"+key+"}:r", "floor-"+key, expiry)
			})
		}},
		{"zerolock on go-redis", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				l := redislock.NewRWLock(c.redis, key, redislock.WithExpiry(expiry))
				return lockCycle(ctx, l.LockCtx, l.UnlockCtx)
			})
		}},
		{"zerolock on go-zero", func(c clients, key string) cycler {
			return cycleFunc(func(ctx context.Context) (bool, error) {
				l := redislock.NewRWLock(redislock.GoZeroStore(c.gozero), key, redislock.WithExpiry(expiry))
				return lockCycle(ctx, l.LockCtx, l.UnlockCtx)
			})
		}},
		lockReference,
	}},
}

// lockReference is the plain lock's cycle (a new lock on go-redis with
// the default options), beside each primitive's, so that each primitive's
// price over the lock shows in the same run.
var lockReference = cycleContender{"zerolock lock on go-redis (reference)", func(c clients, key string) cycler {
	return cycleFunc(func(ctx context.Context) (bool, error) {
		l := redislock.New(c.redis, key)
		l.SetExpire(expirySeconds)
		return lockCycle(ctx, l.AcquireCtx, l.ReleaseCtx)
	})
}}

// cycleFunc is a cycler made of a function.
type cycleFunc func(ctx context.Context) (bool, error)

func (f cycleFunc) cycle(ctx context.Context) (bool, error) { return f(ctx) }

// must is for constructors whose arguments the bench chose: an error is a
// bug of the bench.
func must[T any](v T, err error) T {
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	return v
}

// primitiveCycles is the scenario every primitive runs in.
var primitiveCycles = scenario{goroutines: 50}

// runPrimitives runs one round of every primitive scenario.
func runPrimitives(cl clients, rep *report, r int, d time.Duration) {
	for _, ps := range primitiveScenarios {
		if !selected(ps.name) {
			continue
		}
		sc := primitiveCycles
		sc.name = ps.name
		runCycles(cl, rep.admin, ps.contenders[0], sc, -1-r, d/5) // warm-up
		for _, i := range rotation(len(ps.contenders), r) {
			c := ps.contenders[i]
			c.name = ps.name + ": " + c.name // its own key prefix
			s := runCycles(cl, rep.admin, c, sc, r, d)
			rep.add(ps.name, ps.contenders[i].name, s)
			fmt.Fprintf(os.Stderr, "round %d  %-34s %-26s %9.0f op/s  %5.1f µs/op in Redis  %d errors\n",
				r+1, shorten(ps.name), ps.contenders[i].name, s.ops, s.usecOp, s.errors)
		}
	}
}

// A primitiveHandoff is the hand-off of one primitive among 20 waiters:
// woken by releases (zerolock) against retrying every 10 ms (polling), as
// bsm's LinearBackoff(10ms) does for the mutex.
type primitiveHandoff struct {
	name  string
	limit int32 // holders allowed at once
	new   func(c *redis.Client, key string, poll bool) waiter
}

// pollEvery is the polling contenders' retry interval.
const pollEvery = 10 * time.Millisecond

var primitiveHandoffs = []primitiveHandoff{
	{"hand-off, semaphore (2 permits), 20 waiters, 1 ms holds", 2, func(c *redis.Client, key string, poll bool) waiter {
		s := must(redislock.NewSemaphore(c, key, 2, redislock.WithExpiry(expiry)))
		return primitiveWaiter{s.AcquireCtx, s.AcquireWaitCtx, s.ReleaseCtx, poll}
	}},
	{"hand-off, multi-key lock (3 keys), 20 waiters, 1 ms holds", 1, func(c *redis.Client, key string, poll bool) waiter {
		m := must(redislock.NewMultiLock(c, multiKeys(key), redislock.WithExpiry(expiry)))
		return primitiveWaiter{m.AcquireCtx, m.AcquireWaitCtx, m.ReleaseCtx, poll}
	}},
	{"hand-off, read-write lock, writers, 20 waiters, 1 ms holds", 1, func(c *redis.Client, key string, poll bool) waiter {
		l := redislock.NewRWLock(c, key, redislock.WithExpiry(expiry))
		return primitiveWaiter{l.LockCtx, l.LockWaitCtx, l.UnlockCtx, poll}
	}},
}

// primitiveWaiter waits woken (AcquireWait) or polls (try, sleep 10 ms).
type primitiveWaiter struct {
	try  func(context.Context) (bool, error)
	wait func(context.Context, time.Duration) (bool, error)
	free func(context.Context) (bool, error)
	poll bool
}

func (w primitiveWaiter) acquire(ctx context.Context) error {
	if !w.poll {
		ok, err := w.wait(ctx, 0)
		if err == nil && !ok {
			err = errors.New("not acquired")
		}
		return err
	}
	for {
		ok, err := w.try(ctx)
		if ok || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

func (w primitiveWaiter) release(ctx context.Context) error {
	_, err := w.free(ctx)
	return err
}

// runPrimitiveHandoffs runs one round of every primitive's hand-off.
func runPrimitiveHandoffs(cl clients, rep *report, r int, d time.Duration) {
	for _, h := range primitiveHandoffs {
		if !selected(h.name) {
			continue
		}
		for _, poll := range rotatedBools(r) {
			name := "zerolock"
			if poll {
				name = "polling every " + pollEvery.String()
			}
			key := "bench:" + strings.ReplaceAll(h.name, " ", "") + ":" + strconv.Itoa(r) + ":" + strconv.FormatBool(poll)
			c := contender{name: name, newWaiter: func(c *redis.Client, key string) waiter { return h.new(c, key, poll) }}
			rate, err := handoffsLimit(cl.redis, c, key, 20, h.limit, d)
			s := sample{ops: rate}
			if err != nil {
				s.errors, s.firstErr = 1, err
			}
			rep.add(h.name, name, s)
			fmt.Fprintf(os.Stderr, "round %d  %-34s %-26s %9.0f hand-offs/s\n", r+1, shorten(h.name), name, rate)
		}
	}
}

// rotatedBools is {false, true}, swapped on odd rounds.
func rotatedBools(r int) []bool {
	if r%2 == 1 {
		return []bool{true, false}
	}
	return []bool{false, true}
}
