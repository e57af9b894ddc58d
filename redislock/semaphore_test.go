package redislock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testproc"
	"github.com/zerolock/zerolock/redislock"
)

// newSemaphore returns a semaphore on b's store, failing the test on error.
func newSemaphore(t *testing.T, b backend, key string, permits int, opts ...redislock.Option) *redislock.Semaphore {
	t.Helper()
	s, err := redislock.NewSemaphore(b.store(), key, permits, opts...)
	if err != nil {
		t.Fatalf("NewSemaphore(%q, %d) = %v", key, permits, err)
	}
	return s
}

// mustTakePermit fails the test unless s.Acquire() reports want, nil.
func mustTakePermit(t *testing.T, s *redislock.Semaphore, want bool, who string) {
	t.Helper()
	if ok, err := s.AcquireCtx(context.Background()); ok != want || err != nil {
		t.Fatalf("%s: Acquire() = %v, %v; want %v, nil", who, ok, err, want)
	}
}

// mustFreePermit fails the test unless s.Release() reports want, nil.
func mustFreePermit(t *testing.T, s *redislock.Semaphore, want bool, who string) {
	t.Helper()
	if ok, err := s.ReleaseCtx(context.Background()); ok != want || err != nil {
		t.Fatalf("%s: Release() = %v, %v; want %v, nil", who, ok, err, want)
	}
}

// mustHolders fails the test unless s.Holders reports want.
func mustHolders(t *testing.T, s *redislock.Semaphore, want int) {
	t.Helper()
	if n, err := redislock.SemaphoreHolders(context.Background(), s); n != want || err != nil {
		t.Fatalf("Holders() = %d, %v; want %d", n, err, want)
	}
}

// TestSemaphoreBadArguments: permits below 1 are ErrInvalidPermits, from
// NewSemaphore and from a NewBackend; a negative or empty expiry is
// ErrInvalidExpiry from every call that sends one. No server is needed:
// each is refused before any I/O.
func TestSemaphoreBadArguments(t *testing.T) {
	store := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = store.Close() })
	backend := redislock.NewBackend(store).(zerolock.SemaphoreBackend)
	for _, permits := range []int{0, -1, -100} {
		s, err := redislock.NewSemaphore(store, "zerolock-test:bad", permits)
		if !errors.Is(err, redislock.ErrInvalidPermits) || s != nil {
			t.Errorf("NewSemaphore(permits %d) = %v, %v; want nil, ErrInvalidPermits", permits, s, err)
		}
		l, err := backend.NewSemaphore("zerolock-test:bad", permits, zerolock.LockerOptions{Expiry: time.Second})
		if !errors.Is(err, redislock.ErrInvalidPermits) || l != nil {
			t.Errorf("NewBackend NewSemaphore(permits %d) = %v, %v; want nil, ErrInvalidPermits", permits, l, err)
		}
	}
	for _, tc := range []struct {
		name string
		opts []redislock.Option
	}{
		{"negative expiry", []redislock.Option{redislock.WithExpiry(-time.Second)}},
		{"empty expiry and tolerance", []redislock.Option{redislock.WithTolerance(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := redislock.NewSemaphore(store, "zerolock-test:bad", 2, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if _, err := s.AcquireCtx(ctx); !errors.Is(err, redislock.ErrInvalidExpiry) {
				t.Errorf("AcquireCtx = %v, want ErrInvalidExpiry", err)
			}
			if _, err := s.AcquireWaitCtx(ctx, time.Second); !errors.Is(err, redislock.ErrInvalidExpiry) {
				t.Errorf("AcquireWaitCtx = %v, want ErrInvalidExpiry", err)
			}
			if _, err := s.RefreshCtx(ctx); !errors.Is(err, redislock.ErrInvalidExpiry) {
				t.Errorf("RefreshCtx = %v, want ErrInvalidExpiry", err)
			}
			if cause := context.Cause(s.Watch(ctx)); !errors.Is(cause, redislock.ErrInvalidExpiry) {
				t.Errorf("Watch's cause = %v, want ErrInvalidExpiry", cause)
			}
		})
	}
	s, err := redislock.NewSemaphore(store, "zerolock-test:bad", 3)
	if err != nil || redislock.SemaphorePermits(s) != 3 || redislock.SemaphoreKey(s) != "zerolock-test:bad" {
		t.Fatalf("NewSemaphore = %v (permits %d, key %q), %v", s, redislock.SemaphorePermits(s), redislock.SemaphoreKey(s), err)
	}
}

// TestSemaphoreNeverMoreThanN on a redis-server, both stores.
func TestSemaphoreNeverMoreThanN(t *testing.T) {
	srv := redistest.Start(t)
	for _, b := range backends(t, srv) {
		t.Run(b.name, func(t *testing.T) { checkNeverMoreThanN(t, b) })
	}
}

// checkNeverMoreThanN: 12 instances of a 3-permit semaphore, each on its
// own goroutine, half trying once and half waiting, take and free permits
// 40 times each with a 1 ms hold; an atomic counter of holders inside is
// never above 3, and reaches 3.
func checkNeverMoreThanN(t *testing.T, b backend) {
	const permits, workers, rounds = 3, 12, 40
	key := "zerolock-test:" + t.Name()
	var (
		inside, most, acquired atomic.Int64
		wg                     sync.WaitGroup
	)
	for w := range workers {
		s := newSemaphore(t, b, key, permits, redislock.WithExpiry(30*time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				var ok bool
				var err error
				if w%2 == 0 {
					ok, err = s.AcquireWaitCtx(context.Background(), 5*time.Second)
				} else {
					ok, err = s.AcquireCtx(context.Background())
				}
				if err != nil {
					t.Errorf("worker %d: acquire: %v", w, err)
					return
				}
				if !ok {
					continue
				}
				acquired.Add(1)
				n := inside.Add(1)
				if n > permits {
					t.Errorf("worker %d: %d holders of a %d-permit semaphore", w, n, permits)
				}
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Millisecond) // the hold: lets the others in beside it
				inside.Add(-1)
				if ok, err := s.ReleaseCtx(context.Background()); !ok || err != nil {
					t.Errorf("worker %d: Release() = %v, %v; want true, nil", w, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if most.Load() != permits {
		t.Errorf("at most %d holders at once in %d acquisitions; want the %d permits reached", most.Load(), acquired.Load(), permits)
	}
	t.Logf("%d acquisitions, at most %d holders at once", acquired.Load(), most.Load())
}

// TestSemaphoreOwnExpiry on a redis-server, both stores.
func TestSemaphoreOwnExpiry(t *testing.T) {
	srv := redistest.Start(t)
	for _, b := range backends(t, srv) {
		t.Run(b.name, func(t *testing.T) { checkOwnExpiry(t, b) })
	}
}

// checkOwnExpiry: of three holders of a 3-permit semaphore, the one with a
// 300 ms expiry loses its permit after 300 ms and not before, while the
// others keep theirs; its permit is then free for a newcomer, and its
// Refresh and Release report false.
func checkOwnExpiry(t *testing.T, b backend) {
	const expiry = 300 * time.Millisecond
	key := "zerolock-test:" + t.Name()
	short := newSemaphore(t, b, key, 3, redislock.WithExpiry(expiry), redislock.WithTolerance(0))
	long1 := newSemaphore(t, b, key, 3, redislock.WithExpiry(30*time.Second))
	long2 := newSemaphore(t, b, key, 3, redislock.WithExpiry(30*time.Second))
	newcomer := newSemaphore(t, b, key, 3, redislock.WithExpiry(30*time.Second))
	mustTakePermit(t, long1, true, "long1")
	mustTakePermit(t, long2, true, "long2")
	start := time.Now()
	mustTakePermit(t, short, true, "short")
	mustTakePermit(t, newcomer, false, "newcomer while 3 permits are held")
	for deadline := start.Add(5 * time.Second); ; {
		n, err := redislock.SemaphoreHolders(context.Background(), short)
		if err != nil {
			t.Fatal(err)
		}
		if n == 2 {
			if d := time.Since(start); d < expiry-5*time.Millisecond {
				t.Fatalf("the 300 ms permit was gone %v after it was taken", d)
			}
			break
		}
		if n != 3 || time.Now().After(deadline) {
			t.Fatalf("Holders() = %d %v after the short permit was taken; want 3 until it expires, then 2", n, time.Since(start))
		}
		time.Sleep(10 * time.Millisecond) // poll until the permit expires
	}
	for _, s := range []*redislock.Semaphore{long1, long2} {
		if ok, err := s.RefreshCtx(context.Background()); !ok || err != nil {
			t.Fatalf("Refresh() of a long permit beside an expired one = %v, %v; want true", ok, err)
		}
	}
	if ok, err := short.RefreshCtx(context.Background()); ok || err != nil {
		t.Fatalf("Refresh() of the expired permit = %v, %v; want false, nil", ok, err)
	}
	mustTakePermit(t, newcomer, true, "newcomer after the short permit expired")
	mustFreePermit(t, short, false, "short, expired")
	mustHolders(t, long1, 3)
	for _, s := range []*redislock.Semaphore{long1, long2, newcomer} {
		mustFreePermit(t, s, true, "a holder")
	}
}

// TestSemaphoreKilledHolder on a redis-server, both stores.
func TestSemaphoreKilledHolder(t *testing.T) {
	srv := redistest.Start(t)
	for _, b := range backends(t, srv) {
		t.Run(b.name, func(t *testing.T) { checkKilledHolder(t, b, srv.Addr()) })
	}
}

// semaphoreChildEnv makes the test binary a semaphore holder: see
// TestSemaphoreHolderChild.
const semaphoreChildEnv = "ZEROLOCK_SEMAPHORE_CHILD"

// checkKilledHolder: a child process (this test binary, on the same kind
// of store) takes a 2-permit semaphore's second permit with a 1 s expiry
// and is SIGKILLed. A waiter whose back-off is 10 s gets that
// permit once it expires on the server's clock, not before, and the
// parent's own permit is untouched.
func checkKilledHolder(t *testing.T, b backend, addrs string) {
	key := "zerolock-test:" + t.Name()
	admin := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: strings.Split(addrs, ",")})
	t.Cleanup(func() { _ = admin.Close() })
	ctx := context.Background()
	mine := newSemaphore(t, b, key, 2, redislock.WithExpiry(30*time.Second))
	mustTakePermit(t, mine, true, "parent")
	before, err := admin.ZRange(ctx, key, 0, -1).Result()
	if err != nil || len(before) != 1 {
		t.Fatalf("members before the child: %v, %v", before, err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestSemaphoreHolderChild$")
	cmd.Env = append(os.Environ(), semaphoreChildEnv+"=1", "SEMAPHORE_STORE="+b.name,
		"SEMAPHORE_ADDRS="+addrs, "SEMAPHORE_KEY="+key)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	proc, err := testproc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proc.Kill)
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "held" {
		t.Fatalf("child did not take a permit: %q", lines.Text())
	}
	// When the child's permit expires, on the server's clock, read before
	// the kill so that a slow kill cannot hide it.
	var score float64
	members, err := admin.ZRangeWithScores(ctx, key, 0, -1).Result()
	for _, m := range members {
		if m.Member != before[0] {
			score = m.Score
		}
	}
	serverNow, timeErr := admin.Time(ctx).Result()
	read := time.Now()
	if err != nil || timeErr != nil || score == 0 {
		t.Fatalf("the child's permit is not in the key: members %v, %v, %v", members, err, timeErr)
	}
	expires := read.Add(time.Duration(int64(score)-serverNow.UnixMilli()) * time.Millisecond)
	proc.Kill()

	waiter := newSemaphore(t, b, key, 2, redislock.WithExpiry(30*time.Second),
		redislock.WithBackoff(10*time.Second, 10*time.Second))
	ok, err := waiter.AcquireWaitCtx(ctx, 5*time.Second)
	got := time.Now()
	if !ok || err != nil {
		t.Fatalf("waiter: AcquireWaitCtx = %v, %v; want the killed holder's permit", ok, err)
	}
	if got.Before(expires.Add(-5 * time.Millisecond)) {
		t.Fatalf("waiter got a permit %v before the killed holder's expired", expires.Sub(got))
	}
	t.Logf("waiter got the killed holder's permit %v after it expired", got.Sub(expires).Round(time.Millisecond))
	if ok, err := mine.RefreshCtx(context.Background()); !ok || err != nil {
		t.Fatalf("parent's Refresh() after the child's permit expired = %v, %v; want true", ok, err)
	}
	mustFreePermit(t, waiter, true, "waiter")
	mustFreePermit(t, mine, true, "parent")
}

// TestSemaphoreHolderChild is the child of checkKilledHolder: run only as
// a re-executed test binary, it takes a permit for 1 s, prints "held",
// and waits to be killed.
func TestSemaphoreHolderChild(t *testing.T) {
	if os.Getenv(semaphoreChildEnv) == "" {
		t.Skip("run by checkKilledHolder only")
	}
	name, addrs, key := os.Getenv("SEMAPHORE_STORE"), os.Getenv("SEMAPHORE_ADDRS"), os.Getenv("SEMAPHORE_KEY")
	var store redislock.Store
	switch {
	case strings.HasPrefix(name, "go-zero"):
		typ := zredis.NodeType
		if strings.Contains(name, "cluster") {
			typ = zredis.ClusterType
		}
		store = redislock.GoZeroStore(zredis.MustNewRedis(zredis.RedisConf{
			Host: addrs, Type: typ, NonBlock: true, DisableIdentity: true,
		}))
	case strings.Contains(name, "cluster"):
		store = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ",")})
	default:
		store = redis.NewClient(&redis.Options{Addr: addrs})
	}
	s, err := redislock.NewSemaphore(store, key, 2,
		redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.AcquireCtx(context.Background()); !ok || err != nil {
		fmt.Printf("failed %v %v\n", ok, err)
		os.Exit(1)
	}
	fmt.Println("held")
	time.Sleep(time.Minute) // until killed
	os.Exit(1)
}

// TestSemaphoreWokenWaiters on a redis-server, both stores.
func TestSemaphoreWokenWaiters(t *testing.T) {
	srv := redistest.Start(t)
	for _, b := range backends(t, srv) {
		t.Run(b.name, func(t *testing.T) { checkWokenWaiters(t, b) })
	}
}

// checkWokenWaiters: two waiters with a 10 s back-off wait on a full
// 2-permit semaphore whose permits last 30 s. Each release hands its
// permit to one of them, well before the back-off could have fired (5 s at
// the earliest, jittered): the release woke it. The other keeps waiting.
func checkWokenWaiters(t *testing.T, b backend) {
	key := "zerolock-test:" + t.Name()
	holders := []*redislock.Semaphore{
		newSemaphore(t, b, key, 2, redislock.WithExpiry(30*time.Second)),
		newSemaphore(t, b, key, 2, redislock.WithExpiry(30*time.Second)),
	}
	for _, h := range holders {
		mustTakePermit(t, h, true, "holder")
	}
	type result struct {
		s   *redislock.Semaphore
		err error
	}
	got := make(chan result, 2)
	start := time.Now()
	for range 2 {
		w := newSemaphore(t, b, key, 2, redislock.WithExpiry(30*time.Second),
			redislock.WithBackoff(10*time.Second, 10*time.Second))
		go func() {
			ok, err := w.AcquireWaitCtx(context.Background(), 20*time.Second)
			if err == nil && !ok {
				err = errors.New("wait limit passed")
			}
			got <- result{w, err}
		}()
	}
	for deadline := time.Now().Add(4 * time.Second); redislock.HubWaiters(b.store(), key) < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the waiters never started waiting")
		}
		time.Sleep(time.Millisecond) // poll until both wait
	}
	backoffFires := time.NewTimer(time.Until(start.Add(5 * time.Second)))
	defer backoffFires.Stop()
	var woken []*redislock.Semaphore
	for i, h := range holders {
		mustFreePermit(t, h, true, "holder")
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatalf("waiter after release %d: %v", i+1, r.err)
			}
			woken = append(woken, r.s)
		case <-backoffFires.C:
			t.Fatalf("no waiter got the permit of release %d before a 10 s back-off could have fired", i+1)
		}
		if i == 0 {
			select {
			case r := <-got:
				t.Fatalf("both waiters returned after one release (%v)", r.err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	for _, w := range woken {
		mustFreePermit(t, w, true, "woken waiter")
	}
}

// TestSemaphoreReleaseByNonHolder: instances that hold no permit (never
// acquired, refused, or released already) release nothing, and the
// holder's permit stays.
func TestSemaphoreReleaseByNonHolder(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		holder := newSemaphore(t, b, key, 1, redislock.WithExpiry(30*time.Second))
		never := newSemaphore(t, b, key, 1, redislock.WithExpiry(30*time.Second))
		refused := newSemaphore(t, b, key, 1, redislock.WithExpiry(30*time.Second))
		mustFreePermit(t, never, false, "never acquired, free key")
		mustTakePermit(t, holder, true, "holder")
		mustTakePermit(t, refused, false, "refused")
		mustFreePermit(t, never, false, "never acquired")
		mustFreePermit(t, refused, false, "refused")
		mustHolders(t, holder, 1)
		if ok, err := holder.RefreshCtx(context.Background()); !ok || err != nil {
			t.Fatalf("holder's Refresh() after the non-holders' releases = %v, %v; want true", ok, err)
		}
		mustTakePermit(t, refused, false, "refused again: the holder's permit must survive")
		mustFreePermit(t, holder, true, "holder")
		mustFreePermit(t, holder, false, "holder, released already")
		if n := admin.Exists(context.Background(), key).Val(); n != 0 {
			t.Fatal("the key outlived its last permit's release")
		}
	})
}

// TestSemaphoreRefresh: Refresh resets a live permit's expiry, reports
// false for a lost permit without re-creating it (even with permits
// free), and false for an instance that never acquired.
func TestSemaphoreRefresh(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		s := newSemaphore(t, b, key, 2, redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
		mustTakePermit(t, s, true, "holder")
		redislock.SetSemaphoreExpiry(s, 20*time.Second)
		if ok, err := s.RefreshCtx(ctx); !ok || err != nil {
			t.Fatalf("RefreshCtx of a held permit = %v, %v; want true", ok, err)
		}
		if ttl, err := s.TTL(ctx); ttl != 0 || err != nil {
			t.Fatalf("TTL with a permit free = %v, %v; want 0", ttl, err)
		}
		if ttl := admin.PTTL(ctx, key).Val(); ttl <= 10*time.Second || ttl > 20*time.Second {
			t.Fatalf("key's PTTL after a refresh to 20 s = %v", ttl)
		}
		admin.ZRem(ctx, key, admin.ZRange(ctx, key, 0, -1).Val()[0])
		if ok, err := s.RefreshCtx(ctx); ok || err != nil {
			t.Fatalf("RefreshCtx of a deleted permit = %v, %v; want false, nil", ok, err)
		}
		if n := admin.Exists(ctx, key).Val(); n != 0 {
			t.Fatal("RefreshCtx re-created a lost permit")
		}
		never := newSemaphore(t, b, key, 2, redislock.WithExpiry(time.Second))
		if ok, err := never.RefreshCtx(context.Background()); ok || err != nil {
			t.Fatalf("Refresh of an instance that never acquired = %v, %v; want false, nil", ok, err)
		}
		mustHolders(t, never, 0)
	})
}

// TestSemaphoreWatch: a watched 400 ms permit outlives its expiry; when
// its key is deleted the Watch context ends with ErrLockLost; a released
// permit's Watch ends with ErrReleased.
func TestSemaphoreWatch(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		const expiry = 400 * time.Millisecond
		ctx := context.Background()
		s := newSemaphore(t, b, key, 1, redislock.WithExpiry(expiry), redislock.WithTolerance(0))
		other := newSemaphore(t, b, key, 1, redislock.WithExpiry(30*time.Second))
		start := time.Now()
		mustTakePermit(t, s, true, "watched")
		watched := s.Watch(ctx, zerolock.RenewEvery(50*time.Millisecond))
		for time.Since(start) < 2*expiry+100*time.Millisecond {
			if watched.Err() != nil {
				t.Fatalf("Watch ended while the permit was held: %v", context.Cause(watched))
			}
			mustTakePermit(t, other, false, "other while the watched permit lives")
			time.Sleep(20 * time.Millisecond) // poll past the unrenewed expiry
		}
		admin.Del(ctx, key)
		select {
		case <-watched.Done():
		case <-time.After(5 * time.Second):
			t.Fatal("Watch did not notice the deleted key")
		}
		if cause := context.Cause(watched); !errors.Is(cause, zerolock.ErrLockLost) {
			t.Fatalf("Watch's cause after the key was deleted = %v; want ErrLockLost", cause)
		}
		mustFreePermit(t, s, false, "watched, lost")

		mustTakePermit(t, s, true, "watched again")
		watched = s.Watch(ctx)
		mustFreePermit(t, s, true, "watched")
		if cause := context.Cause(watched); !errors.Is(cause, zerolock.ErrReleased) {
			t.Fatalf("Watch's cause after Release = %v; want ErrReleased", cause)
		}
		if cause := context.Cause(s.Watch(ctx)); !errors.Is(cause, zerolock.ErrLockLost) {
			t.Fatalf("Watch of a released permit: cause %v; want ErrLockLost", cause)
		}
	})
}

// TestSemaphorePermitsChange: instances that disagree on permits, as
// during a deployment that changes them. Raising lets more in at once;
// lowering evicts nobody, refuses newcomers until fewer holders than the
// new number are left, and lets the holders refresh.
func TestSemaphorePermitsChange(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		two := func() *redislock.Semaphore {
			return newSemaphore(t, b, key, 2, redislock.WithExpiry(30*time.Second))
		}
		a1, a2, a3 := two(), two(), two()
		mustTakePermit(t, a1, true, "a1 (2 permits)")
		mustTakePermit(t, a2, true, "a2 (2 permits)")
		mustTakePermit(t, a3, false, "a3 (2 permits) with 2 held")

		raised := newSemaphore(t, b, key, 3, redislock.WithExpiry(30*time.Second))
		mustTakePermit(t, raised, true, "raised (3 permits) with 2 held")
		mustTakePermit(t, a3, false, "a3 (2 permits) with 3 held")
		mustHolders(t, a1, 3)

		lowered := newSemaphore(t, b, key, 1, redislock.WithExpiry(30*time.Second))
		mustTakePermit(t, lowered, false, "lowered (1 permit) with 3 held")
		mustHolders(t, lowered, 3)
		for _, s := range []*redislock.Semaphore{a1, a2, raised} {
			mustTakePermit(t, s, true, "a holder again (re-entrant) beside the lowered limit")
			if ok, err := s.RefreshCtx(context.Background()); !ok || err != nil {
				t.Fatalf("Refresh() of a holder beside the lowered limit = %v, %v; want true", ok, err)
			}
		}
		mustFreePermit(t, a1, true, "a1")
		mustFreePermit(t, a2, true, "a2")
		mustTakePermit(t, lowered, false, "lowered (1 permit) with 1 held")
		mustTakePermit(t, a3, true, "a3 (2 permits) with 1 held")
		mustFreePermit(t, raised, true, "raised")
		mustFreePermit(t, a3, true, "a3")
		mustTakePermit(t, lowered, true, "lowered (1 permit) with none held")
		mustFreePermit(t, lowered, true, "lowered")
	})
}

// TestSemaphoreTTLAndHolders: TTL is 0 while a permit is free, else the
// time until the earliest permit expires; Holders counts live permits; the
// key lives as long as its latest permit and goes with its last release.
func TestSemaphoreTTLAndHolders(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		early := newSemaphore(t, b, key, 2, redislock.WithExpiry(10*time.Second), redislock.WithTolerance(0))
		late := newSemaphore(t, b, key, 2, redislock.WithExpiry(20*time.Second), redislock.WithTolerance(0))
		ttl := func(want string, ok func(time.Duration) bool) {
			t.Helper()
			d, err := early.TTL(ctx)
			if err != nil || !ok(d) {
				t.Fatalf("TTL() = %v, %v; want %s", d, err, want)
			}
		}
		ttl("0 on a free key", func(d time.Duration) bool { return d == 0 })
		mustHolders(t, early, 0)
		mustTakePermit(t, late, true, "late")
		ttl("0 with a permit free", func(d time.Duration) bool { return d == 0 })
		mustHolders(t, early, 1)
		mustTakePermit(t, early, true, "early")
		ttl("the early permit's time, (5s, 10s]", func(d time.Duration) bool { return d > 5*time.Second && d <= 10*time.Second })
		mustHolders(t, late, 2)
		if pttl := admin.PTTL(ctx, key).Val(); pttl <= 15*time.Second || pttl > 20*time.Second {
			t.Fatalf("key's PTTL = %v; want the latest permit's, (15s, 20s]", pttl)
		}
		mustFreePermit(t, late, true, "late")
		if pttl := admin.PTTL(ctx, key).Val(); pttl <= 5*time.Second || pttl > 10*time.Second {
			t.Fatalf("key's PTTL after the latest permit's release = %v; want the remaining one's, (5s, 10s]", pttl)
		}
		mustFreePermit(t, early, true, "early")
		if n := admin.Exists(ctx, key).Val(); n != 0 {
			t.Fatal("the key outlived its last permit")
		}
	})
}

// TestSemaphoreWrongType: a key that holds a RedisLock (or any value that
// is not a sorted set) makes every call fail with ErrNotSemaphore, naming
// Redis's WRONGTYPE, and is left alone. The scripts report it rather than
// fail, so six such calls do not open go-zero's circuit breaker: the
// RedisLock's release on the same store succeeds after them.
func TestSemaphoreWrongType(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		lock := b.newLock(key, redislock.WithExpiry(30*time.Second))
		mustAcquire(t, lock, true)
		s := newSemaphore(t, b, key, 2, redislock.WithExpiry(time.Second))
		calls := map[string]func() error{
			"Acquire":     func() error { _, err := s.AcquireCtx(ctx); return err },
			"AcquireWait": func() error { _, err := s.AcquireWaitCtx(ctx, time.Second); return err },
			"Release":     func() error { _, err := s.ReleaseCtx(ctx); return err },
			"Refresh":     func() error { _, err := s.RefreshCtx(ctx); return err },
			"TTL":         func() error { _, err := s.TTL(ctx); return err },
			"Holders":     func() error { _, err := redislock.SemaphoreHolders(ctx, s); return err },
		}
		for name, call := range calls {
			err := call()
			if !errors.Is(err, redislock.ErrNotSemaphore) || !strings.Contains(err.Error(), "WRONGTYPE") {
				t.Errorf("%s on a RedisLock's key = %v; want ErrNotSemaphore naming WRONGTYPE", name, err)
			}
		}
		mustRelease(t, lock, true)
	})
}

// TestSemaphoreBackend: a NewBackend is a zerolock.SemaphoreBackend
// whose semaphores take LockerOptions' expiry exactly (no tolerance) and
// announce releases unless the backend was made WithoutWakeups.
func TestSemaphoreBackend(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		for _, tc := range []struct {
			name      string
			opts      []redislock.Option
			publishes int64
		}{
			{"default", nil, 1},
			{"WithoutWakeups", []redislock.Option{redislock.WithoutWakeups()}, 0},
		} {
			backend, ok := redislock.NewBackend(b.store(), tc.opts...).(zerolock.SemaphoreBackend)
			if !ok {
				t.Fatal("NewBackend is not a zerolock.SemaphoreBackend")
			}
			l, err := backend.NewSemaphore(key, 2, zerolock.LockerOptions{Expiry: 3 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := l.AcquireCtx(ctx); !ok || err != nil {
				t.Fatalf("%s: AcquireCtx = %v, %v", tc.name, ok, err)
			}
			if pttl := admin.PTTL(ctx, key).Val(); pttl <= 2*time.Second || pttl > 3*time.Second {
				t.Fatalf("%s: PTTL = %v; want the 3 s expiry, no tolerance", tc.name, pttl)
			}
			before := redistest.Calls(t, admin, "spublish", "publish")
			if ok, err := l.ReleaseCtx(ctx); !ok || err != nil {
				t.Fatalf("%s: ReleaseCtx = %v, %v", tc.name, ok, err)
			}
			if got := redistest.Calls(t, admin, "spublish", "publish") - before; got != tc.publishes {
				t.Errorf("%s: a release published %d times, want %d", tc.name, got, tc.publishes)
			}
		}
	})
}

// TestSemaphoreRefusesReplicaAcks: a semaphore's permits are not made to
// survive a failover, so WithReplicaAcks is refused, not ignored.
func TestSemaphoreRefusesReplicaAcks(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer client.Close()
	_, err := redislock.NewSemaphore(client, "sem", 2, redislock.WithReplicaAcks(1, time.Second))
	if !errors.Is(err, redislock.ErrReplicaAcksUnsupported) {
		t.Fatalf("NewSemaphore(WithReplicaAcks) = %v; want ErrReplicaAcksUnsupported", err)
	}
	_, err = redislock.NewBackend(client, redislock.WithReplicaAcks(1, time.Second)).(zerolock.SemaphoreBackend).
		NewSemaphore("sem", 2, zerolock.LockerOptions{Expiry: time.Second})
	if !errors.Is(err, redislock.ErrReplicaAcksUnsupported) {
		t.Fatalf("NewBackend(WithReplicaAcks).NewSemaphore = %v; want ErrReplicaAcksUnsupported", err)
	}
}
