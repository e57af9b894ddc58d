package redislock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"
	zprom "github.com/zeromicro/go-zero/core/prometheus"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/observe"
	"github.com/zerolock/zerolock/redislock"
)

// The metrics are process-wide: each test names its locks after itself and
// compares the series before and after, as read from Prometheus's default
// registry (the one go-zero's /metrics serves).

// series is one lock name's metrics of a backend and kind.
type series struct{ name, backend, kind string }

func mutexSeries(name string) series { return series{name, "redis", "mutex"} }

// get reads zerolock_lock_<family> for s (and the extra label pairs, such
// as "outcome", "busy") from the default registry: a counter's value, or a
// histogram's sample count; 0 when the series does not exist.
func (s series) get(t *testing.T, family string, extra ...string) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name": s.name, "backend": s.backend, "kind": s.kind}
	for i := 0; i+1 < len(extra); i += 2 {
		want[extra[i]] = extra[i+1]
	}
	for _, f := range families {
		if f.GetName() != "zerolock_lock_"+family {
			continue
		}
		for _, m := range f.GetMetric() {
			if matches(m, want) {
				if h := m.GetHistogram(); h != nil {
					return float64(h.GetSampleCount())
				}
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func matches(m *dto.Metric, want map[string]string) bool {
	found := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			found++
		}
	}
	return found == len(want)
}

// snapshot is a set of readings taken at one moment, to compare with later.
type snapshot map[string]float64

// read takes the readings of the families (each "family" or
// "family label=value") for s.
func (s series) read(t *testing.T, keys ...string) snapshot {
	t.Helper()
	snap := snapshot{}
	for _, k := range keys {
		family, pair, _ := strings.Cut(k, " ")
		label, value, _ := strings.Cut(pair, "=")
		if label == "" {
			snap[k] = s.get(t, family)
		} else {
			snap[k] = s.get(t, family, label, value)
		}
	}
	return snap
}

// expectDeltas fails the test for each reading that did not change by
// want[key] since before.
func (s series) expectDeltas(t *testing.T, before snapshot, want map[string]float64) {
	t.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	after := s.read(t, keys...)
	for _, k := range keys {
		if got := after[k] - before[k]; got != want[k] {
			t.Errorf("%s{%s,%s,%s}: changed by %v; want %v", k, s.name, s.backend, s.kind, got, want[k])
		}
	}
}

// all is every reading the tests compare.
var all = []string{
	"acquisitions_total outcome=acquired", "acquisitions_total outcome=busy",
	"acquisitions_total outcome=timeout", "acquisitions_total outcome=error",
	"wait_seconds", "hold_seconds", "renewals_total", "renew_failures_total",
	"lost_total cause=deleted", "lost_total cause=taken_over",
	"lost_total cause=renew_failed", "lost_total cause=max_hold", "release_gone_total",
}

// zeroExcept is want for every reading of all: 0 unless given.
func zeroExcept(want map[string]float64) map[string]float64 {
	full := make(map[string]float64, len(all))
	for _, k := range all {
		full[k] = want[k]
	}
	return full
}

// waitFor polls cond every millisecond until it holds, failing the test
// after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
	}
}

// TestObserveContention: goroutines try one key at once; every try counts
// once, as acquired or busy, the acquired ones are exactly the successes,
// and every release of a success adds a hold time.
func TestObserveContention(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	s := mutexSeries(t.Name())
	before := s.read(t, all...)

	const goroutines, tries = 8, 25
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		successes int
		failures  []error
	)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lock := redislock.New(client, "zerolock-test:"+t.Name(),
				redislock.WithName(t.Name()), redislock.WithExpiry(5*time.Second))
			for i := 0; i < tries; i++ {
				ok, err := lock.AcquireCtx(context.Background())
				if ok {
					ok, err = lock.ReleaseCtx(context.Background())
					mu.Lock()
					successes++
					mu.Unlock()
				}
				if err != nil {
					mu.Lock()
					failures = append(failures, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("errors: %v", failures)
	}
	if successes == 0 || successes == goroutines*tries {
		t.Fatalf("%d of %d tries won: no contention to observe", successes, goroutines*tries)
	}
	t.Logf("%d of %d tries won", successes, goroutines*tries)
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": float64(successes),
		"acquisitions_total outcome=busy":     float64(goroutines*tries - successes),
		"hold_seconds":                        float64(successes),
	}))
}

// TestObserveWait: a waiting acquire is one acquisition, whatever the
// tries inside it: one that times out counts a timeout and a wait time,
// one woken by the release counts acquired and a wait time; neither counts
// its first, refused try as busy.
func TestObserveWait(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	key := "zerolock-test:" + t.Name()
	holder := redislock.New(client, key, redislock.WithName(t.Name()+"-holder"), redislock.WithExpiry(5*time.Second))
	waiter := redislock.New(client, key, redislock.WithName(t.Name()), redislock.WithExpiry(5*time.Second))
	s := mutexSeries(t.Name())
	mustAcquire(t, holder, true)

	before := s.read(t, all...)
	if ok, err := waiter.AcquireWaitCtx(context.Background(), 100*time.Millisecond); ok || err != nil {
		t.Fatalf("AcquireWaitCtx(100ms) = %v, %v; want false, nil", ok, err)
	}
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=timeout": 1,
		"wait_seconds":                       1,
	}))

	before = s.read(t, all...)
	type result struct {
		ok  bool
		err error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := waiter.AcquireWaitCtx(context.Background(), 10*time.Second)
		done <- result{ok, err}
	}()
	waitFor(t, 5*time.Second, "the waiter subscribed", func() bool {
		return redislock.HubWaiters(client, key) == 1
	})
	mustRelease(t, holder, true)
	if r := <-done; !r.ok || r.err != nil {
		t.Fatalf("AcquireWaitCtx(10s) = %v, %v; want true, nil", r.ok, r.err)
	}
	mustRelease(t, waiter, true)
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"wait_seconds":                        1,
		"hold_seconds":                        1,
	}))
}

// TestObserveLost: a watched lock whose key an admin deletes counts as
// lost{deleted}; one whose key an admin overwrites counts as
// lost{taken_over}; both counted renewals before.
func TestObserveLost(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		cause  string
		tamper func(key string) error
	}{
		{"deleted", func(key string) error { return client.Del(ctx, key).Err() }},
		{"taken_over", func(key string) error { return client.Set(ctx, key, "someone-else", time.Minute).Err() }},
	} {
		t.Run(tc.cause, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			lock := redislock.New(client, key, redislock.WithName(t.Name()),
				redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
			s := mutexSeries(t.Name())
			before := s.read(t, all...)
			mustAcquire(t, lock, true)
			lockCtx := lock.Watch(ctx, zerolock.RenewEvery(50*time.Millisecond))
			waitFor(t, 2*time.Second, "a renewal counted", func() bool {
				return s.get(t, "renewals_total") > before["renewals_total"]
			})
			if err := tc.tamper(key); err != nil {
				t.Fatal(err)
			}
			if cause := waitDone(t, lockCtx, 2*time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
				t.Fatalf("cause = %v; want ErrLockLost", cause)
			}
			after := s.read(t, "renewals_total")
			renewals := after["renewals_total"] - before["renewals_total"]
			s.expectDeltas(t, before, zeroExcept(map[string]float64{
				"acquisitions_total outcome=acquired": 1,
				"renewals_total":                      renewals,
				"lost_total cause=" + tc.cause:        1,
			}))
			// The release finds the lock gone: the sign of a hold lost.
			before = s.read(t, all...)
			mustRelease(t, lock, false)
			s.expectDeltas(t, before, zeroExcept(map[string]float64{"release_gone_total": 1}))
			client.Del(ctx, key)
		})
	}
}

// TestObserveRenewFailed: with the network to Redis cut, renewals fail
// (each counted) until the hold may have expired, and the loss counts as
// lost{renew_failed}.
func TestObserveRenewFailed(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	proxy := faultproxy.Start(t, srv.Addr())
	client := redis.NewClient(&redis.Options{Addr: proxy.Addr(), MaxRetries: -1,
		DialTimeout: 100 * time.Millisecond, ReadTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = client.Close() })
	key := "zerolock-test:" + t.Name()
	lock := redislock.New(client, key, redislock.WithName(t.Name()),
		redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
	s := mutexSeries(t.Name())
	before := s.read(t, all...)
	mustAcquire(t, lock, true)
	lockCtx := lock.Watch(context.Background(), zerolock.RenewEvery(100*time.Millisecond))
	waitFor(t, 2*time.Second, "a renewal counted", func() bool {
		return s.get(t, "renewals_total") > before["renewals_total"]
	})
	proxy.Cut()
	if cause := waitDone(t, lockCtx, 3*time.Second); !errors.Is(cause, zerolock.ErrRenewFailed) {
		t.Fatalf("cause = %v; want ErrRenewFailed", cause)
	}
	failures := s.get(t, "renew_failures_total") - before["renew_failures_total"]
	if failures < 1 {
		t.Errorf("renew_failures_total changed by %v; want at least 1", failures)
	}
	renewals := s.get(t, "renewals_total") - before["renewals_total"]
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"renewals_total":                      renewals,
		"renew_failures_total":                failures,
		"lost_total cause=renew_failed":       1,
	}))
	proxy.Heal()
	_, _ = lock.ReleaseCtx(context.Background())
}

// TestObserveMaxHold: a Watch past zerolock.MaxHold counts as
// lost{max_hold}, and the release after it, which frees the key, adds a
// hold time rather than a release that found it gone.
func TestObserveMaxHold(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	lock := redislock.New(srv.Client(t), "zerolock-test:"+t.Name(), redislock.WithName(t.Name()),
		redislock.WithExpiry(5*time.Second))
	s := mutexSeries(t.Name())
	before := s.read(t, all...)
	mustAcquire(t, lock, true)
	lockCtx := lock.Watch(context.Background(), zerolock.MaxHold(100*time.Millisecond))
	if cause := waitDone(t, lockCtx, 2*time.Second); !errors.Is(cause, zerolock.ErrMaxHold) {
		t.Fatalf("cause = %v; want ErrMaxHold", cause)
	}
	mustRelease(t, lock, true)
	renewals := s.get(t, "renewals_total") - before["renewals_total"]
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"renewals_total":                      renewals,
		"lost_total cause=max_hold":           1,
		"hold_seconds":                        1,
	}))
}

// TestObserveRelease: a release of a hold adds its hold time (about how
// long it was held); a release after the key expired counts
// release_gone; a release of a lock never taken counts nothing; and a
// released watch counts no loss.
func TestObserveRelease(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	key := "zerolock-test:" + t.Name()
	s := mutexSeries(t.Name())
	lock := redislock.New(client, key, redislock.WithName(t.Name()), redislock.WithExpiry(5*time.Second))

	before := s.read(t, all...)
	sumBefore := holdSum(t, s)
	mustAcquire(t, lock, true)
	lock.Watch(ctx)                   // released below: no loss
	time.Sleep(20 * time.Millisecond) // the hold's length, not a synchronisation
	mustRelease(t, lock, true)
	mustRelease(t, lock, false) // never taken again: not a release that found it gone
	if held := holdSum(t, s) - sumBefore; held < 0.02 || held > 5 {
		t.Errorf("hold_seconds grew by %vs; want about 0.02", held)
	}
	renewals := s.get(t, "renewals_total") - before["renewals_total"]
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"renewals_total":                      renewals,
		"hold_seconds":                        1,
	}))

	before = s.read(t, all...)
	lock = redislock.New(client, key, redislock.WithName(t.Name()),
		redislock.WithExpiry(50*time.Millisecond), redislock.WithTolerance(0))
	mustAcquire(t, lock, true)
	waitFor(t, 2*time.Second, "the key expired", func() bool {
		return client.Exists(ctx, key).Val() == 0
	})
	mustRelease(t, lock, false)
	mustRelease(t, lock, false) // nothing held any more: not counted again
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"release_gone_total":                  1,
	}))
}

// TestObserveHoldBegunUnmetered: a hold that began while metrics were off
// is not timed to its end (its acquires read the clock once, for the
// watchdog), even when metrics come back on and it is acquired again
// re-entrantly before its release; a hold that began metered is timed to
// its end, even when it is acquired again while they are off. The next
// hold is timed again.
func TestObserveHoldBegunUnmetered(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	key := "zerolock-test:" + t.Name()
	s := mutexSeries(t.Name())
	lock := redislock.New(client, key, redislock.WithName(t.Name()), redislock.WithExpiry(5*time.Second))
	t.Cleanup(func() { observe.SetMetrics(true) })

	before := s.read(t, all...)
	observe.SetMetrics(false)
	mustAcquire(t, lock, true)
	observe.SetMetrics(true)
	mustAcquire(t, lock, true) // re-entrant: the same, untimed hold
	mustRelease(t, lock, true)
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1, // the metered acquire
	}))

	before = s.read(t, all...)
	sumBefore := holdSum(t, s)
	mustAcquire(t, lock, true)
	time.Sleep(20 * time.Millisecond) // the hold's length before the re-entrant acquire, not a synchronisation
	observe.SetMetrics(false)
	mustAcquire(t, lock, true) // re-entrant: the same, timed hold
	observe.SetMetrics(true)
	mustRelease(t, lock, true)
	if held := holdSum(t, s) - sumBefore; held < 0.02 || held > 5 {
		t.Errorf("hold_seconds grew by %vs; want about 0.02 (timed from the first acquire)", held)
	}
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"hold_seconds":                        1,
	}))
}

// holdSum is the sum of s's hold_seconds.
func holdSum(t *testing.T, s series) float64 {
	t.Helper()
	families, err := prometheus.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"name": s.name, "backend": s.backend, "kind": s.kind}
	for _, f := range families {
		if f.GetName() == "zerolock_lock_hold_seconds" {
			for _, m := range f.GetMetric() {
				if matches(m, want) {
					return m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	return 0
}

// TestObserveSemaphore: a Semaphore reports kind "semaphore": an acquire
// refused by the full semaphore is busy, a waiting one times out, and a
// watched permit whose key is deleted is lost{deleted}.
func TestObserveSemaphore(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	key := "zerolock-test:" + t.Name()
	s := series{t.Name(), "redis", "semaphore"}
	before := s.read(t, all...)
	newSem := func() *redislock.Semaphore {
		sem, err := redislock.NewSemaphore(client, key, 1, redislock.WithName(t.Name()), redislock.WithExpiry(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return sem
	}
	first, second := newSem(), newSem()
	mustTake(t, first.AcquireCtx, true)
	mustTake(t, second.AcquireCtx, false)
	if ok, err := second.AcquireWaitCtx(ctx, 50*time.Millisecond); ok || err != nil {
		t.Fatalf("AcquireWaitCtx(50ms) = %v, %v; want false, nil", ok, err)
	}
	lockCtx := first.Watch(ctx, zerolock.RenewEvery(50*time.Millisecond))
	waitFor(t, 2*time.Second, "a renewal counted", func() bool {
		return s.get(t, "renewals_total") > before["renewals_total"]
	})
	if err := client.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if cause := waitDone(t, lockCtx, 2*time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
		t.Fatalf("cause = %v; want ErrLockLost", cause)
	}
	mustTake(t, first.ReleaseCtx, false)
	renewals := s.get(t, "renewals_total") - before["renewals_total"]
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"acquisitions_total outcome=busy":     1,
		"acquisitions_total outcome=timeout":  1,
		"wait_seconds":                        1,
		"renewals_total":                      renewals,
		"lost_total cause=deleted":            1,
		"release_gone_total":                  1,
	}))
	if got := mutexSeries(t.Name()).get(t, "acquisitions_total", "outcome", "acquired"); got != 0 {
		t.Errorf("the semaphore reported %v acquisitions as a mutex", got)
	}
}

// mustTake calls an acquire or release and checks its result.
func mustTake(t *testing.T, call func(context.Context) (bool, error), want bool) {
	t.Helper()
	if ok, err := call(context.Background()); ok != want || err != nil {
		t.Fatalf("got %v, %v; want %v, nil", ok, err, want)
	}
}

// TestObserveMultiLock: a MultiLock reports kind "multilock": a try
// refused by one held key is busy, and a watched lock one of whose keys is
// overwritten is lost{taken_over}; its release adds no hold time.
func TestObserveMultiLock(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	prefix := "zerolock-test:" + t.Name()
	s := series{t.Name(), "redis", "multilock"}
	before := s.read(t, all...)
	newMulti := func(keys ...string) *redislock.MultiLock {
		m, err := redislock.NewMultiLock(client, keys, redislock.WithName(t.Name()), redislock.WithExpiry(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	first, second := newMulti(prefix+":a", prefix+":b"), newMulti(prefix+":b", prefix+":c")
	mustTake(t, first.AcquireCtx, true)
	mustTake(t, second.AcquireCtx, false)
	lockCtx := first.Watch(ctx, zerolock.RenewEvery(50*time.Millisecond))
	waitFor(t, 2*time.Second, "a renewal counted", func() bool {
		return s.get(t, "renewals_total") > before["renewals_total"]
	})
	if err := client.Set(ctx, prefix+":b", "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if cause := waitDone(t, lockCtx, 2*time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
		t.Fatalf("cause = %v; want ErrLockLost", cause)
	}
	mustTake(t, first.ReleaseCtx, false) // frees a, not b: not all held
	renewals := s.get(t, "renewals_total") - before["renewals_total"]
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"acquisitions_total outcome=busy":     1,
		"renewals_total":                      renewals,
		"lost_total cause=taken_over":         1,
		"release_gone_total":                  1,
	}))
}

// TestObserveRWLock: an RWLock reports its sides apart, kinds
// "rwlock-read" and "rwlock-write": a reader's hold, a writer refused by
// it (busy) and timing out while it waits, the writer's hold once the
// reader is gone, and a watched read share deleted (lost{deleted}).
func TestObserveRWLock(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	key := "zerolock-test:" + t.Name()
	read := series{t.Name(), "redis", "rwlock-read"}
	write := series{t.Name(), "redis", "rwlock-write"}
	readBefore, writeBefore := read.read(t, all...), write.read(t, all...)
	newRW := func() *redislock.RWLock {
		return redislock.NewRWLock(client, key, redislock.WithName(t.Name()), redislock.WithExpiry(time.Second),
			redislock.WithBackoff(10*time.Millisecond, 20*time.Millisecond))
	}
	reader, writer := newRW(), newRW()

	mustTake(t, reader.RLockCtx, true)
	mustTake(t, writer.LockCtx, false)
	if ok, err := writer.LockWaitCtx(ctx, 50*time.Millisecond); ok || err != nil {
		t.Fatalf("LockWaitCtx(50ms) = %v, %v; want false, nil", ok, err)
	}
	mustTake(t, reader.RUnlockCtx, true)
	mustTake(t, writer.LockCtx, true)
	mustTake(t, writer.UnlockCtx, true)

	mustTake(t, reader.RLockCtx, true)
	lockCtx := reader.Watch(ctx, zerolock.RenewEvery(50*time.Millisecond))
	waitFor(t, 2*time.Second, "a renewal counted", func() bool {
		return read.get(t, "renewals_total") > readBefore["renewals_total"]
	})
	if err := client.Del(ctx, "{"+key+"}:zerolock.readers|2").Err(); err != nil {
		t.Fatal(err)
	}
	if cause := waitDone(t, lockCtx, 2*time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
		t.Fatalf("cause = %v; want ErrLockLost", cause)
	}
	renewals := read.get(t, "renewals_total") - readBefore["renewals_total"]
	read.expectDeltas(t, readBefore, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 2,
		"hold_seconds":                        1,
		"renewals_total":                      renewals,
		"lost_total cause=deleted":            1,
	}))
	write.expectDeltas(t, writeBefore, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"acquisitions_total outcome=busy":     1,
		"acquisitions_total outcome=timeout":  1,
		"wait_seconds":                        1,
		"hold_seconds":                        1,
	}))
}

// TestObserveRedLock: a RedLock reports once, as backend "redlock"; its
// node locks report nothing.
func TestObserveRedLock(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	var stores []redislock.Store
	for db := 0; db < 3; db++ { // three keyspaces: independent enough here
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: db})
		t.Cleanup(func() { _ = c.Close() })
		stores = append(stores, c)
	}
	key := "zerolock-test:" + t.Name()
	red := series{t.Name(), "redlock", "mutex"}
	before := red.read(t, all...)
	first := redislock.NewRedLock(stores, key, redislock.WithName(t.Name()), redislock.WithExpiry(5*time.Second))
	second := redislock.NewRedLock(stores, key, redislock.WithName(t.Name()), redislock.WithExpiry(5*time.Second))
	mustTake(t, first.AcquireCtx, true)
	mustTake(t, second.AcquireCtx, false)
	mustTake(t, first.ReleaseCtx, true)
	red.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"acquisitions_total outcome=busy":     1,
		"hold_seconds":                        1,
	}))
	node := mutexSeries(t.Name())
	for _, k := range all {
		if v := node.read(t, k)[k]; v != 0 {
			t.Errorf("the node locks reported %s = %v", k, v)
		}
	}
}

// TestObserveBackendName: the locks a Backend makes report
// zerolock.LockerOptions.Name, and a name given WithName to the backend
// when the options have none.
func TestObserveBackendName(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	key := "zerolock-test:" + t.Name()
	backend := redislock.NewBackend(client, redislock.WithName(t.Name()+"-default"))
	named, unnamed := mutexSeries(t.Name()+"-rule"), mutexSeries(t.Name()+"-default")
	sem := series{t.Name() + "-rule", "redis", "semaphore"}
	red := series{t.Name() + "-rule", "redlock", "mutex"}
	before := map[series]float64{}
	for _, s := range []series{named, unnamed, sem, red} {
		before[s] = s.get(t, "acquisitions_total", "outcome", "acquired")
	}

	lock := backend.NewLocker(key+":1", zerolock.LockerOptions{Expiry: time.Second, Name: t.Name() + "-rule"})
	mustTake(t, lock.AcquireCtx, true)
	lock = backend.NewLocker(key+":2", zerolock.LockerOptions{Expiry: time.Second})
	mustTake(t, lock.AcquireCtx, true)
	limiter, err := backend.(zerolock.SemaphoreBackend).NewSemaphore(key+":3", 2,
		zerolock.LockerOptions{Expiry: time.Second, Name: t.Name() + "-rule"})
	if err != nil {
		t.Fatal(err)
	}
	mustTake(t, limiter.AcquireCtx, true)
	redLock := redislock.NewRedLockBackend([]redislock.Store{client}).
		NewLocker(key+":4", zerolock.LockerOptions{Expiry: time.Second, Name: t.Name() + "-rule"})
	mustTake(t, redLock.AcquireCtx, true)

	for _, s := range []series{named, unnamed, sem, red} {
		if got := s.get(t, "acquisitions_total", "outcome", "acquired") - before[s]; got != 1 {
			t.Errorf("acquisitions{name=%s,backend=%s,kind=%s,outcome=acquired} changed by %v; want 1",
				s.name, s.backend, s.kind, got)
		}
	}
}

// recorder installs no global provider: the spans are the parent's
// provider's, which is how the locks find it.
func recorder(t *testing.T) (context.Context, oteltrace.Span, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	return ctx, span, rec
}

// attributes is a span's attributes by key.
func attributes(s sdktrace.ReadOnlySpan) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.AsInterface()
	}
	return m
}

// TestObserveAcquireSpan: under a recording span an acquire is a child
// span "zerolock.acquire" with the lock's name, backend, kind, outcome and
// fencing token; a waiting acquire is one span; without a recording span
// there is none.
func TestObserveAcquireSpan(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	key := "zerolock-test:" + t.Name()
	ctx, request, rec := recorder(t)
	lock := redislock.New(client, key, redislock.WithName(t.Name()), redislock.WithFencing(),
		redislock.WithExpiry(5*time.Second))
	rival := redislock.New(client, key, redislock.WithName(t.Name()))

	if ok, err := lock.AcquireCtx(ctx); !ok || err != nil {
		t.Fatalf("AcquireCtx = %v, %v", ok, err)
	}
	if ok, err := rival.AcquireCtx(ctx); ok || err != nil {
		t.Fatalf("rival AcquireCtx = %v, %v; want false", ok, err)
	}
	if ok, err := rival.AcquireWaitCtx(ctx, 30*time.Millisecond); ok || err != nil {
		t.Fatalf("rival AcquireWaitCtx = %v, %v; want false", ok, err)
	}
	mustRelease(t, lock, true)
	mustAcquire(t, lock, true) // no recording span: no span
	mustRelease(t, lock, true)
	request.End()

	var spans []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "zerolock.acquire" {
			spans = append(spans, s)
		}
	}
	if len(spans) != 3 {
		t.Fatalf("%d acquire spans; want 3 (acquired, busy, timeout)", len(spans))
	}
	for i, want := range []struct {
		outcome string
		fence   bool
	}{{"acquired", true}, {"busy", false}, {"timeout", false}} {
		s := spans[i]
		if s.Parent().SpanID() != request.SpanContext().SpanID() || s.SpanContext().TraceID() != request.SpanContext().TraceID() {
			t.Errorf("span %d: parent %v; want the request span %v", i, s.Parent().SpanID(), request.SpanContext().SpanID())
		}
		attrs := attributes(s)
		for k, v := range map[string]any{
			"zerolock.lock.name": t.Name(), "zerolock.lock.backend": "redis",
			"zerolock.lock.kind": "mutex", "zerolock.lock.outcome": want.outcome,
		} {
			if attrs[k] != v {
				t.Errorf("span %d: %s = %v; want %v", i, k, attrs[k], v)
			}
		}
		if fence, ok := attrs["zerolock.lock.fence"]; want.fence != ok || (ok && fence.(int64) < 1) {
			t.Errorf("span %d: fence %v (present %v); want present %v", i, fence, ok, want.fence)
		}
	}
	if wait, _ := attributes(spans[2])["zerolock.lock.wait_ms"].(float64); wait < 30 {
		t.Errorf("the waiting acquire's wait_ms = %v; want at least 30", wait)
	}
}

// TestObserveLostEvent: a watched lock deleted adds the event
// "zerolock.lock_lost" (cause deleted) to the span Watch was called under.
func TestObserveLostEvent(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	key := "zerolock-test:" + t.Name()
	ctx, request, rec := recorder(t)
	lock := redislock.New(client, key, redislock.WithName(t.Name()),
		redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
	mustAcquire(t, lock, true)
	lockCtx := lock.Watch(ctx, zerolock.RenewEvery(50*time.Millisecond))
	if err := client.Del(context.Background(), key).Err(); err != nil {
		t.Fatal(err)
	}
	if cause := waitDone(t, lockCtx, 2*time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
		t.Fatalf("cause = %v; want ErrLockLost", cause)
	}
	request.End() // as a handler would, once the lock's context ended

	ended := rec.Ended()
	if len(ended) != 1 || ended[0].Name() != "request" {
		t.Fatalf("ended spans %v; want the request span alone", ended)
	}
	var events []string
	for _, e := range ended[0].Events() {
		events = append(events, e.Name)
		if e.Name == "zerolock.lock_lost" {
			attrs := map[string]any{}
			for _, kv := range e.Attributes {
				attrs[string(kv.Key)] = kv.Value.AsInterface()
			}
			if attrs["zerolock.lock.cause"] != "deleted" || attrs["zerolock.lock.name"] != t.Name() {
				t.Errorf("lock_lost attributes %v; want cause deleted and the lock's name", attrs)
			}
			return
		}
	}
	t.Fatalf("request span events %v; want zerolock.lock_lost", events)
}

// TestObserveWaitDeadline: a waiting acquire that its context's deadline
// ends counts as a timeout, as one whose wait limit passed, and its span
// is not marked failed; one whose context is cancelled counts as an error.
func TestObserveWaitDeadline(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	key := "zerolock-test:" + t.Name()
	holder := redislock.New(client, key, redislock.WithName(t.Name()+"-holder"), redislock.WithExpiry(5*time.Second))
	waiter := redislock.New(client, key, redislock.WithName(t.Name()), redislock.WithExpiry(5*time.Second))
	s := mutexSeries(t.Name())
	mustAcquire(t, holder, true)
	parent, request, rec := recorder(t)

	before := s.read(t, all...)
	ctx, cancel := context.WithTimeout(parent, 300*time.Millisecond)
	defer cancel()
	if ok, err := waiter.AcquireWaitCtx(ctx, 0); ok || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireWaitCtx(300ms deadline, no limit) = %v, %v; want false, DeadlineExceeded", ok, err)
	}
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=timeout": 1,
		"wait_seconds":                       1,
	}))

	before = s.read(t, all...)
	ctx, cancel = context.WithCancel(parent)
	done := make(chan error, 1)
	go func() {
		_, err := waiter.AcquireWaitCtx(ctx, 0)
		done <- err
	}()
	waitFor(t, 5*time.Second, "the waiter subscribed", func() bool {
		return redislock.HubWaiters(client, key) == 1
	})
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireWaitCtx(cancelled) = %v; want Canceled", err)
	}
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=error": 1,
		"wait_seconds":                     1,
	}))
	request.End()

	var spans []sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "zerolock.acquire" {
			spans = append(spans, sp)
		}
	}
	if len(spans) != 2 {
		t.Fatalf("%d acquire spans; want 2", len(spans))
	}
	for i, want := range []struct {
		outcome string
		status  codes.Code
	}{{"timeout", codes.Unset}, {"error", codes.Error}} {
		if got := attributes(spans[i])["zerolock.lock.outcome"]; got != want.outcome {
			t.Errorf("span %d: outcome %v; want %s", i, got, want.outcome)
		}
		if got := spans[i].Status().Code; got != want.status {
			t.Errorf("span %d (%s): status %v; want %v", i, want.outcome, got, want.status)
		}
	}
}

// TestObserveHoldAfterExpiry: a hold that ended without a release (it
// expired, or the watchdog found it deleted) is not the start of the next
// one: the instance's next acquire begins a new hold, and its release
// reports that hold's time alone.
func TestObserveHoldAfterExpiry(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	client := srv.Client(t)
	ctx := context.Background()
	const gap = 300 * time.Millisecond // between the holds: what an inflated hold time would add
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, lock *redislock.RedisLock, key string)
	}{
		{"expired", func(t *testing.T, lock *redislock.RedisLock, key string) {
			waitFor(t, 5*time.Second, "the key expired", func() bool {
				return client.Exists(ctx, key).Val() == 0
			})
		}},
		{"deleted", func(t *testing.T, lock *redislock.RedisLock, key string) {
			lockCtx := lock.Watch(ctx, zerolock.RenewEvery(50*time.Millisecond))
			if err := client.Del(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if cause := waitDone(t, lockCtx, 2*time.Second); !errors.Is(cause, zerolock.ErrLockLost) {
				t.Fatalf("cause = %v; want ErrLockLost", cause)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			expiry := 5 * time.Second
			if tc.name == "expired" {
				expiry = 100 * time.Millisecond
			}
			lock := redislock.New(client, key, redislock.WithName(t.Name()),
				redislock.WithExpiry(expiry), redislock.WithTolerance(0))
			s := mutexSeries(t.Name())
			before := s.read(t, all...)
			sumBefore := holdSum(t, s)
			mustAcquire(t, lock, true)
			tc.end(t, lock, key)
			time.Sleep(gap) // the time between the holds, not a synchronisation
			start := time.Now()
			mustAcquire(t, lock, true)
			mustRelease(t, lock, true)
			second := time.Since(start)
			if held := holdSum(t, s) - sumBefore; held > second.Seconds() {
				t.Errorf("the second hold was observed as %.3fs; it lasted under %.3fs (%v after the first began)",
					held, second.Seconds(), gap)
			}
			s.expectDeltas(t, before, map[string]float64{
				"acquisitions_total outcome=acquired": 2,
				"hold_seconds":                        1,
				"release_gone_total":                  0,
			})
		})
	}
}

// TestObserveRenewOvertaken: a renewal still in flight when the hold's
// validity ends (the server hung) counts as a renew failure, as on etcd,
// besides the loss.
func TestObserveRenewOvertaken(t *testing.T) {
	zprom.Enable()
	srv := redistest.Start(t)
	// go-redis's read timeout, 3 s, is far past the validity: the renewal
	// is still waiting when the validity ends.
	client := srv.Client(t)
	lock := redislock.New(client, "zerolock-test:"+t.Name(), redislock.WithName(t.Name()),
		redislock.WithExpiry(500*time.Millisecond), redislock.WithTolerance(0))
	s := mutexSeries(t.Name())
	before := s.read(t, all...)
	mustAcquire(t, lock, true)
	lockCtx := lock.Watch(context.Background(), zerolock.RenewEvery(100*time.Millisecond))
	waitFor(t, 2*time.Second, "a renewal counted", func() bool {
		return s.get(t, "renewals_total") > before["renewals_total"]
	})
	srv.Pause()
	t.Cleanup(srv.Resume)
	if cause := waitDone(t, lockCtx, 3*time.Second); !errors.Is(cause, zerolock.ErrRenewFailed) {
		t.Fatalf("cause = %v; want ErrRenewFailed", cause)
	}
	renewals := s.get(t, "renewals_total") - before["renewals_total"]
	s.expectDeltas(t, before, zeroExcept(map[string]float64{
		"acquisitions_total outcome=acquired": 1,
		"renewals_total":                      renewals,
		"renew_failures_total":                1,
		"lost_total cause=renew_failed":       1,
	}))
	srv.Resume()
	_, _ = lock.ReleaseCtx(context.Background())
}
