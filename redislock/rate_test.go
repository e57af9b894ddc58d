package redislock_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// rateBackend is a NewBackend backend on one kind of store, for Rate.
type rateBackend struct {
	name    string
	backend zerolock.Backend
}

// rateBackends are NewBackend on go-zero's store and on a go-redis client,
// both on srv.
func rateBackends(t *testing.T, srv *redistest.Server) []rateBackend {
	t.Helper()
	var rbs []rateBackend
	for _, b := range backends(t, srv) {
		rbs = append(rbs, rateBackend{b.name, redislock.NewBackend(b.store())})
	}
	return rbs
}

// rateAt counts one request, failing the test on an error; now is the
// server's clock when it answered, in µs, or the later time a new
// admission was logged at.
func rateAt(t *testing.T, b zerolock.Backend, key string, quota int, period time.Duration) (r zerolock.RateResult, now int64) {
	t.Helper()
	r, now, err := redislock.RateAt(context.Background(), b, key, quota, period, "")
	if err != nil {
		t.Fatalf("Rate(%q): %v", key, err)
	}
	return r, now
}

// us is a span of the server's clock in µs as a Duration.
func us(n int64) time.Duration { return time.Duration(n) * time.Microsecond }

// TestRateFreshKeyAdmitsQuota: a fresh key admits Quota requests at once,
// counting Remaining down to 0 with Reset a whole Period; the next is
// refused with RetryAfter exactly the time, on the server's clock, until
// the first admission leaves the window, and Reset until the last does.
// On go-zero's store and a go-redis client.
func TestRateFreshKeyAdmitsQuota(t *testing.T) {
	srv := redistest.Start(t)
	const quota, period = 5, 10 * time.Second
	for _, b := range rateBackends(t, srv) {
		t.Run(b.name, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			var first, last int64
			for i := range quota {
				r, now := rateAt(t, b.backend, key, quota, period)
				if !r.Admitted || r.Remaining != quota-1-i || r.RetryAfter != 0 || r.Reset != period {
					t.Fatalf("request %d of a fresh key: %+v, want admitted with %d remaining, Reset %v", i+1, r, quota-1-i, period)
				}
				if i == 0 {
					first = now
				}
				last = now
			}
			r, now := rateAt(t, b.backend, key, quota, period)
			if r.Admitted || r.Remaining != 0 {
				t.Fatalf("request %d: %+v, want refused with 0 remaining", quota+1, r)
			}
			if want := us(first) + period - us(now); r.RetryAfter != want {
				t.Fatalf("RetryAfter %v, want %v: until the first admission leaves the window", r.RetryAfter, want)
			}
			if want := us(last) + period - us(now); r.Reset != want {
				t.Fatalf("Reset %v, want %v: until the last admission leaves the window", r.Reset, want)
			}
			if r.RetryAfter <= period-time.Second || r.RetryAfter > period {
				t.Fatalf("RetryAfter %v, want just under the %v period", r.RetryAfter, period)
			}
		})
	}
}

// TestRateRetryAfterAdmitsOne: a client refused with RetryAfter that waits
// that long is admitted, once (the quota's first admission came 500ms
// before the others, which are still in the window, however late a loaded
// machine wakes from the wait): the next request is refused again, until
// the second admission leaves the window.
func TestRateRetryAfterAdmitsOne(t *testing.T) {
	srv := redistest.Start(t)
	const quota, period = 3, time.Second
	for _, b := range rateBackends(t, srv) {
		t.Run(b.name, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			start := time.Now()
			var admitted []int64
			for i := range quota {
				_, now := rateAt(t, b.backend, key, quota, period)
				admitted = append(admitted, now)
				if i == 0 {
					time.Sleep(500 * time.Millisecond)
				}
			}
			r, _ := rateAt(t, b.backend, key, quota, period)
			if r.Admitted {
				t.Fatal("admitted over the quota")
			}
			// On this process's clock, within a millisecond of the period
			// less the time since the first admission was sent.
			if r.RetryAfter > period-500*time.Millisecond || r.RetryAfter < period-time.Since(start)-time.Millisecond {
				t.Fatalf("RetryAfter %v, want %v less the %v since the first admission", r.RetryAfter, period, time.Since(start))
			}
			time.Sleep(r.RetryAfter)
			r, _ = rateAt(t, b.backend, key, quota, period)
			if !r.Admitted || r.Remaining != 0 {
				t.Fatalf("after RetryAfter: %+v, want admitted, the last of the quota", r)
			}
			r, now2 := rateAt(t, b.backend, key, quota, period)
			if r.Admitted {
				t.Fatal("two admitted after one RetryAfter")
			}
			if want := us(admitted[1]) + period - us(now2); r.RetryAfter != want {
				t.Fatalf("RetryAfter %v, want %v: until the burst's second admission leaves", r.RetryAfter, want)
			}
		})
	}
}

// attempt is one count as the server answered it.
type attempt struct {
	now      int64 // the server's clock, µs, or a new admission's later logged time
	admitted bool
}

// checkRateExact has workers goroutines count requests of one key as fast
// as they can for run, and checks every answer against a reference model
// of the sliding log, on the times the server returned: no Period-long
// window holds more than Quota admissions, and every refusal had Quota
// admissions in the Period before it (so the bound is met without
// refusing more than it needs). It fails unless the key was saturated:
// refusals seen and at least half the admissions the rate allows.
func checkRateExact(t *testing.T, b zerolock.Backend, key string, quota int, period time.Duration, workers int, run time.Duration) {
	t.Helper()
	var (
		mu       sync.Mutex
		attempts []attempt
		wg       sync.WaitGroup
	)
	deadline := time.Now().Add(run)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []attempt
			for time.Now().Before(deadline) {
				r, now, err := redislock.RateAt(context.Background(), b, key, quota, period, "")
				if err != nil {
					t.Error(err)
					return
				}
				mine = append(mine, attempt{now, r.Admitted})
			}
			mu.Lock()
			attempts = append(attempts, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	slices.SortStableFunc(attempts, func(a, b attempt) int { return cmp.Compare(a.now, b.now) })
	var times []int64
	for _, a := range attempts {
		if a.admitted {
			times = append(times, a.now)
		}
	}
	p := period.Microseconds()
	for i := 0; i+quota < len(times); i++ {
		if times[i+quota]-times[i] < p {
			t.Fatalf("%d admissions within %v (from %d to %d µs): the window holds more than the quota %d",
				quota+1, us(times[i+quota]-times[i]), times[i], times[i+quota], quota)
		}
	}
	refused := 0
	for _, a := range attempts {
		if a.admitted {
			continue
		}
		refused++
		// Admissions in (now-Period, now]: those of the same µs may have
		// come after it, which only adds to the count.
		lo, _ := slices.BinarySearch(times, a.now-p+1)
		hi, _ := slices.BinarySearch(times, a.now+1)
		if hi-lo < quota {
			// Admissions logged up to 1ms after it may have counted too:
			// one admitted while the server's clock read earlier than the
			// newest admission is logged at that admission's time.
			hi, _ = slices.BinarySearch(times, a.now+1001)
		}
		if hi-lo < quota {
			t.Fatalf("refused at %d µs with %d admissions in the period before it, under the quota %d", a.now, hi-lo, quota)
		}
	}
	allowed := quota * int(run/period)
	t.Logf("%d counts: %d admitted (the rate allows %d to %d), %d refused", len(attempts), len(times), allowed, allowed+quota, refused)
	if refused == 0 || len(times) < allowed/2 {
		t.Fatalf("%d admitted and %d refused: the key was not saturated, so the check proves nothing", len(times), refused)
	}
}

// TestRateSlidingWindowExact: 16 goroutines count one key as fast as they
// can for a second and a half, at 7 per 100ms; the admissions the server
// timed never put more than 7 in any 100ms, and each refusal had 7 in the
// 100ms before it. On go-zero's store and a go-redis client.
func TestRateSlidingWindowExact(t *testing.T) {
	srv := redistest.Start(t)
	for _, b := range rateBackends(t, srv) {
		t.Run(b.name, func(t *testing.T) {
			checkRateExact(t, b.backend, "zerolock-test:"+t.Name(), 7, 100*time.Millisecond, 16, 1500*time.Millisecond)
		})
	}
}

// TestRateCluster: on the shared Redis Cluster, through a go-redis
// *ClusterClient and go-zero's cluster store, a fresh key admits its
// quota and refuses the next, and the sliding window is exact under
// concurrency.
func TestRateCluster(t *testing.T) {
	c := redistest.SharedCluster(t)
	for _, cb := range clusterBackends(t, c) {
		t.Run(cb.name, func(t *testing.T) {
			b := redislock.NewBackend(cb.store())
			// A key of this run's own: the window of a -count=3 run's
			// previous one (make race-repeat) still holds its requests.
			key := "zerolock-test:{" + t.Name() + ":" + strconv.FormatInt(time.Now().UnixNano(), 36) + "}"
			for i := range 4 {
				if r, _ := rateAt(t, b, key, 4, time.Minute); !r.Admitted {
					t.Fatalf("request %d of a fresh key refused", i+1)
				}
			}
			if r, _ := rateAt(t, b, key, 4, time.Minute); r.Admitted || r.RetryAfter <= 0 {
				t.Fatalf("request 5: %+v, want refused with a RetryAfter", r)
			}
			checkRateExact(t, b, key+":exact", 5, 100*time.Millisecond, 12, time.Second)
		})
	}
}

// TestRateResendCountsOnce: a count sent again with the same member, as
// go-redis resends a command whose reply was lost, is admitted again and
// not counted twice.
func TestRateResendCountsOnce(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	b := redislock.NewBackend(srv.Client(t))
	key := "zerolock-test:" + t.Name()
	for range 2 {
		r, _, err := redislock.RateAt(ctx, b, key, 3, time.Minute, "resent")
		if err != nil || !r.Admitted || r.Remaining != 2 {
			t.Fatalf("Rate = %+v, %v, want admitted with 2 remaining both times", r, err)
		}
	}
	if n := admin.ZCard(ctx, key).Val(); n != 1 {
		t.Fatalf("the log holds %d admissions, want 1", n)
	}
	// A resend is admitted even when its own admission filled the quota,
	// and a new request is not.
	full := key + ":full"
	for range 2 {
		r, _, err := redislock.RateAt(ctx, b, full, 1, time.Minute, "resent")
		if err != nil || !r.Admitted || r.Remaining != 0 {
			t.Fatalf("Rate on a full log = %+v, %v, want the resend admitted with 0 remaining", r, err)
		}
	}
	if r, _, err := redislock.RateAt(ctx, b, full, 1, time.Minute, "new"); err != nil || r.Admitted || r.RetryAfter <= 0 {
		t.Fatalf("a new request on a full log = %+v, %v, want refused with a RetryAfter", r, err)
	}
	if n := admin.ZCard(ctx, full).Val(); n != 1 {
		t.Fatalf("the full log holds %d admissions, want 1", n)
	}
}

// TestRateKeyExpires: the log expires a Period after its newest
// admission, and costs Redis memory in proportion to Quota: under 40
// bytes an admission up to Redis's 128-entry compact encoding
// (zset-max-listpack-entries), under 160 past it.
func TestRateKeyExpires(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	b := redislock.NewBackend(srv.Client(t))
	key := "zerolock-test:" + t.Name()
	const period = 300 * time.Millisecond
	rateAt(t, b, key, 2, period)
	if ttl := admin.PTTL(ctx, key).Val(); ttl <= 0 || ttl > period {
		t.Fatalf("PTTL %v, want up to the %v period", ttl, period)
	}
	time.Sleep(period + 50*time.Millisecond)
	if n := admin.Exists(ctx, key).Val(); n != 0 {
		t.Fatal("the log outlived its period")
	}

	for _, tc := range []struct {
		quota    int
		perEntry int64
	}{{100, 40}, {1000, 160}} {
		logKey := fmt.Sprintf("%s:%d", key, tc.quota)
		for range tc.quota {
			rateAt(t, b, logKey, tc.quota, time.Minute)
		}
		bytes, err := admin.MemoryUsage(ctx, logKey).Result()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d admissions: %d bytes, %d an admission", tc.quota, bytes, bytes/int64(tc.quota))
		if bytes/int64(tc.quota) >= tc.perEntry {
			t.Errorf("%d admissions: %d bytes an admission, want under %d", tc.quota, bytes/int64(tc.quota), tc.perEntry)
		}
	}
}

// TestRateErrors: a key holding another type is ErrNotRateLog, a
// misconfiguration; a quota under 1 or a period under 1ms is
// ErrInvalidRate, refused without I/O; an ended context and a store that
// is down are errors, the first matching the context's.
func TestRateErrors(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	for _, b := range rateBackends(t, srv) {
		t.Run(b.name, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			if err := srv.Client(t).Set(ctx, key, "a lock's token", 0).Err(); err != nil {
				t.Fatal(err)
			}
			_, err := b.backend.(zerolock.RateBackend).Rate(ctx, key, 3, time.Second)
			if !errors.Is(err, redislock.ErrNotRateLog) || !errors.Is(err, zerolock.ErrMisconfigured) {
				t.Fatalf("Rate on a string key: %v, want ErrNotRateLog, a misconfiguration", err)
			}
		})
	}
	// An error reply other than WRONGTYPE from inside the script (NOPERM
	// here; READONLY after a failover, MISCONF) is that error, not a
	// misconfigured key.
	admin := srv.Client(t)
	if err := admin.Do(ctx, "ACL", "SETUSER", "nozrem", "on", ">pw", "~*", "+@all", "-zremrangebyscore").Err(); err != nil {
		t.Fatal(err)
	}
	limited := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "nozrem", Password: "pw"})
	t.Cleanup(func() { _ = limited.Close() })
	_, err := redislock.NewBackend(limited).(zerolock.RateBackend).Rate(ctx, "zerolock-test:"+t.Name()+":acl", 3, time.Second)
	if err == nil || errors.Is(err, redislock.ErrNotRateLog) || errors.Is(err, zerolock.ErrMisconfigured) ||
		!strings.Contains(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "can't run this command") {
		// Redis 7.0 words the refusal "ERR The user executing the script
		// can't run this command"; later servers say NOPERM.
		t.Fatalf("Rate by a user denied ZREMRANGEBYSCORE: %v, want its permission error, not a misconfigured key", err)
	}
	unreachable := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = unreachable.Close() })
	down := redislock.NewBackend(unreachable).(zerolock.RateBackend)
	for _, tc := range []struct {
		quota  int
		period time.Duration
	}{{0, time.Second}, {-1, time.Second}, {1, 999 * time.Microsecond}} {
		if _, err := down.Rate(ctx, "k", tc.quota, tc.period); !errors.Is(err, redislock.ErrInvalidRate) {
			t.Errorf("Rate(quota %d, period %v) = %v, want ErrInvalidRate", tc.quota, tc.period, err)
		}
	}
	if _, err := down.Rate(ctx, "k", 1, time.Second); err == nil || errors.Is(err, zerolock.ErrMisconfigured) {
		t.Errorf("Rate on a store that is down = %v, want an outage", err)
	}
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := down.Rate(ended, "k", 1, time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("Rate with an ended context = %v, want context.Canceled", err)
	}
}

// TestRateOnServers: the script counts alike on Valkey 9 and Redis 8 as on
// the system's redis-server: a fresh key admits its quota and refuses the
// next, and the sliding window is exact under concurrency.
func TestRateOnServers(t *testing.T) {
	redistest.EachFlavour(t, func(t *testing.T, srv *redistest.Server) {
		t.Logf("on %s", srv.Version())
		for _, b := range rateBackends(t, srv) {
			t.Run(b.name, func(t *testing.T) {
				key := "zerolock-test:" + t.Name()
				for i := range 3 {
					if r, _ := rateAt(t, b.backend, key, 3, time.Minute); !r.Admitted || r.Remaining != 2-i {
						t.Fatalf("request %d of a fresh key: %+v", i+1, r)
					}
				}
				if r, _ := rateAt(t, b.backend, key, 3, time.Minute); r.Admitted || r.RetryAfter <= 0 {
					t.Fatalf("request 4: %+v, want refused with a RetryAfter", r)
				}
				checkRateExact(t, b.backend, key+":exact", 4, 100*time.Millisecond, 8, 500*time.Millisecond)
			})
		}
	}, redistest.NewFlavours()...)
}
