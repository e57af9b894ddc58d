package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/zeromicro/go-zero/core/limit"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock"
)

// The rate scenarios measure issue 29's rate count (redislock's sliding
// log, the script behind Mode: rate) beside go-zero's two Redis limiters,
// each asked for the same rate: PeriodLimit (a fixed window of one
// second, its INCR script) as the baseline, and TokenLimiter (a token
// bucket refilling rateQuota a second with a burst of rateQuota, whose
// script takes "now" from the client). An operation is one request
// counted; Redis µs/op is each script's CPU per request.
const (
	rateAdmitting = "rate check, admitting (quota 100000/s), own key per goroutine, 50 goroutines"
	rateRefusing  = "rate check, refusing (quota 100/s), one key, 50 goroutines"

	// periodLimitBaseline is the rate scenarios' baseline.
	periodLimitBaseline = "go-zero PeriodLimit (fixed window)"
)

// rateScenarios: under the first each key sees a few hundred requests a
// second and every one is admitted (the sliding log holds a second of
// them); under the second one key is far over its quota and nearly every
// request is refused.
var rateScenarios = []struct {
	scenario
	quota int
}{
	{scenario{rateAdmitting, 50, false}, 100000},
	{scenario{rateRefusing, 50, true}, 100},
}

// rateContenders count one request of key against quota per second.
func rateContenders(quota int) []cycleContender {
	return []cycleContender{
		{periodLimitBaseline, func(c clients, key string) cycler {
			l := limit.NewPeriodLimit(1, quota, c.gozero, "")
			return cycleFunc(func(ctx context.Context) (bool, error) {
				code, err := l.TakeCtx(ctx, key)
				return code == limit.Allowed || code == limit.HitQuota, err
			})
		}},
		{"go-zero TokenLimiter (token bucket)", func(c clients, key string) cycler {
			l := limit.NewTokenLimiter(quota, quota, c.gozero, key)
			// Not cut by the run's deadline: TokenLimiter logs every failed
			// call, and falls back to a local limiter.
			return cycleFunc(func(ctx context.Context) (bool, error) { return l.AllowCtx(context.WithoutCancel(ctx)), nil })
		}},
		{"zerolock rate on go-redis (sliding log)", func(c clients, key string) cycler {
			return rateCycler(redislock.NewBackend(c.redis), key, quota)
		}},
		{"zerolock rate on go-zero (sliding log)", func(c clients, key string) cycler {
			return rateCycler(redislock.NewBackend(redislock.GoZeroStore(c.gozero)), key, quota)
		}},
	}
}

// rateCycler counts one request a cycle on b, as a rate rule does.
func rateCycler(b zerolock.Backend, key string, quota int) cycler {
	rb, ok := b.(zerolock.RateBackend)
	if !ok {
		fmt.Fprintln(os.Stderr, "bench: a Redis backend is not a RateBackend")
		os.Exit(1)
	}
	return cycleFunc(func(ctx context.Context) (bool, error) {
		res, err := rb.Rate(ctx, key, quota, time.Second)
		return res.Admitted, err
	})
}

// runRates runs one round of both rate scenarios.
func runRates(cl clients, rep *report, r int, d time.Duration) {
	for _, rs := range rateScenarios {
		if !selected(rs.name) {
			continue
		}
		contenders := rateContenders(rs.quota)
		runCycles(cl, rep.admin, contenders[0], rs.scenario, -1-r, d/5) // warm-up
		for _, i := range rotation(len(contenders), r) {
			c := contenders[i]
			c.name = rs.name + ": " + c.name // its own key prefix
			s := runCycles(cl, rep.admin, c, rs.scenario, r, d)
			rep.add(rs.name, contenders[i].name, s)
			fmt.Fprintf(os.Stderr, "round %d  %-34s %-26s %9.0f op/s  %5.1f µs/op in Redis  %d errors\n",
				r+1, shorten(rs.name), contenders[i].name, s.ops, s.usecOp, s.errors)
		}
	}
}

// loadRateScripts makes one call of each rate contender, alone, before
// any run: go-zero's limiters send EVALSHA, and 50 first calls answered
// NOSCRIPT at once open go-zero's circuit breaker for the store (zerolock's
// scripts do not count NOSCRIPT against it), after which the runs would
// measure refusals and TokenLimiter's in-process fallback.
func loadRateScripts(cl clients) error {
	for i, c := range rateContenders(1) {
		if _, err := c.new(cl, "bench:rate:load:"+strconv.Itoa(i)).cycle(context.Background()); err != nil {
			return fmt.Errorf("load the rate scripts: %s: %w", c.name, err)
		}
	}
	return nil
}
