package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// backoffFloor is the shortest sleep of a waiter made WithBackoff(10s,
// 10s) (jitter spreads a back-off d over [d/2, d)), and no hold in these
// tests ends sooner, so a waiter that gets the lock before it was woken.
const backoffFloor = 5 * time.Second

// newMulti returns a MultiLock on keys with a 30 s expiry, failing the test
// on a constructor error.
func newMulti(t *testing.T, store redislock.Store, keys []string, opts ...redislock.Option) *redislock.MultiLock {
	t.Helper()
	m, err := redislock.NewMultiLock(store, keys, append([]redislock.Option{redislock.WithExpiry(30 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("NewMultiLock(%q) = %v", keys, err)
	}
	return m
}

func mustMultiAcquire(t *testing.T, m *redislock.MultiLock, want bool) {
	t.Helper()
	if ok, err := m.AcquireCtx(context.Background()); err != nil || ok != want {
		t.Fatalf("MultiLock%q.Acquire() = %v, %v; want %v, nil", redislock.MultiLockKeys(m), ok, err, want)
	}
}

func mustMultiRelease(t *testing.T, m *redislock.MultiLock, want bool) {
	t.Helper()
	if ok, err := m.ReleaseCtx(context.Background()); err != nil || ok != want {
		t.Fatalf("MultiLock%q.Release() = %v, %v; want %v, nil", redislock.MultiLockKeys(m), ok, err, want)
	}
}

// values returns what the server holds under keys ("" for none).
func values(t *testing.T, admin redis.Cmdable, keys []string) []string {
	t.Helper()
	out := make([]string, len(keys))
	for i, k := range keys {
		v, err := admin.Get(context.Background(), k).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatalf("GET %q: %v", k, err)
		}
		out[i] = v
	}
	return out
}

// mustHoldOneToken fails unless every key holds one and the same token,
// with an expiry, and returns it.
func mustHoldOneToken(t *testing.T, admin redis.Cmdable, keys []string) string {
	t.Helper()
	vals := values(t, admin, keys)
	for i, v := range vals {
		if v == "" || v != vals[0] {
			t.Fatalf("keys %q hold %q: want one token in all", keys, vals)
		}
		if ttl := admin.PTTL(context.Background(), keys[i]).Val(); ttl <= 0 {
			t.Fatalf("key %q held with PTTL %v: want an expiry", keys[i], ttl)
		}
	}
	return vals[0]
}

// mustBeFree fails unless none of keys exists.
func mustBeFree(t *testing.T, admin redis.Cmdable, keys ...string) {
	t.Helper()
	for i, v := range values(t, admin, keys) {
		if v != "" {
			t.Fatalf("key %q holds %q: want it free", keys[i], v)
		}
	}
}

// multiKeys names n keys for the running test.
func multiKeys(t *testing.T, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("zerolock-test:%s:k%d", t.Name(), i)
	}
	return keys
}

// TestMultiLockBadArguments: every bad argument is an error that
// errors.Is recognises, from the constructor or before any I/O.
func TestMultiLockBadArguments(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = client.Close() })
	for _, tc := range []struct {
		name string
		keys []string
		opts []redislock.Option
		want error
		says string // what the error's message must say
	}{
		{"nil keys", nil, nil, redislock.ErrInvalidKeys, "no keys"},
		{"no keys", []string{}, nil, redislock.ErrInvalidKeys, "no keys"},
		{"duplicate", []string{"a", "b", "a"}, nil, redislock.ErrInvalidKeys, `duplicate key "a"`},
		{"duplicate empty key", []string{"", "b", ""}, nil, redislock.ErrInvalidKeys, `duplicate key ""`},
		{"replica acks", []string{"a", "b"}, []redislock.Option{redislock.WithReplicaAcks(1, time.Second)}, redislock.ErrReplicaAcksUnsupported, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := redislock.NewMultiLock(client, tc.keys, tc.opts...)
			if !errors.Is(err, tc.want) || m != nil {
				t.Fatalf("NewMultiLock(%q) = %v, %v; want nil, %v", tc.keys, m, err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %s", err, tc.says)
			}
		})
	}

	for _, tc := range []struct {
		name string
		opts []redislock.Option
	}{
		{"negative expiry", []redislock.Option{redislock.WithExpiry(-time.Second)}},
		{"no expiry, no tolerance", []redislock.Option{redislock.WithTolerance(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := redislock.NewMultiLock(client, []string{"a", "b"}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			calls := map[string]func() (bool, error){
				"AcquireCtx":     func() (bool, error) { return m.AcquireCtx(ctx) },
				"AcquireWaitCtx": func() (bool, error) { return m.AcquireWaitCtx(ctx, time.Second) },
				"RefreshCtx":     func() (bool, error) { return m.RefreshCtx(ctx) },
			}
			for name, call := range calls {
				if ok, err := call(); ok || !errors.Is(err, redislock.ErrInvalidExpiry) {
					t.Errorf("%s = %v, %v; want false, ErrInvalidExpiry", name, ok, err)
				}
			}
			if cause := context.Cause(m.Watch(ctx)); !errors.Is(cause, redislock.ErrInvalidExpiry) {
				t.Errorf("Watch's cause = %v; want ErrInvalidExpiry", cause)
			}
		})
	}
}

// TestMultiLockKeys: Keys lists every key once, in a fixed order whatever
// the order given (by slot, so a hash-tagged set stays together), and is a
// copy. The empty key is allowed, as RedisLock allows it.
func TestMultiLockKeys(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = client.Close() })
	keys := []string{"sku:9", "", "{order:1}:b", "sku:1", "{order:1}:a"}
	m := newMulti(t, client, keys)
	got := redislock.MultiLockKeys(m)
	if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(keys))) {
		t.Fatalf("Keys() = %q; want the keys %q", got, keys)
	}
	reversed := slices.Clone(keys)
	slices.Reverse(reversed)
	if other := redislock.MultiLockKeys(newMulti(t, client, reversed)); !slices.Equal(other, got) {
		t.Errorf("Keys() of the reversed list = %q; want the same order %q", other, got)
	}
	a, b := slices.Index(got, "{order:1}:a"), slices.Index(got, "{order:1}:b")
	if b != a+1 {
		t.Errorf("Keys() = %q: the keys of one hash tag are not side by side", got)
	}
	got[0] = "changed"
	if redislock.MultiLockKeys(m)[0] == "changed" {
		t.Error("Keys() returned the lock's own slice")
	}
}

// TestMultiLockAllOrNone: on a real redis-server, on both stores, a
// MultiLock one of whose keys is held takes none of them; once free it
// takes all with one token and an expiry; acquiring again refreshes; the
// release frees all of them. A set with the empty key works the same.
func TestMultiLockAllOrNone(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, _ string) {
		for _, keys := range [][]string{multiKeys(t, 3), append(multiKeys(t, 1), "")} {
			m := newMulti(t, b.store(), keys)
			busy := keys[len(keys)-1]
			holder := b.newLock(busy)
			holder.SetExpire(30)
			mustAcquire(t, holder, true)
			mustMultiAcquire(t, m, false)
			mustBeFree(t, admin, slices.DeleteFunc(slices.Clone(keys), func(k string) bool { return k == busy })...)
			mustRelease(t, holder, true)

			mustMultiAcquire(t, m, true)
			mustHoldOneToken(t, admin, keys)
			if err := admin.PExpire(context.Background(), keys[0], time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			mustMultiAcquire(t, m, true) // re-entrant: refreshes every key
			if ttl := admin.PTTL(context.Background(), keys[0]).Val(); ttl <= time.Second {
				t.Errorf("PTTL after a re-entrant acquire = %v; want it refreshed to about 30s", ttl)
			}
			for _, k := range keys {
				mustAcquire(t, b.newLock(k), false)
			}
			mustMultiRelease(t, m, true)
			mustBeFree(t, admin, keys...)
			mustMultiRelease(t, m, false)
		}
	})
}

// TestMultiLockReleaseByNonHolder: another MultiLock of the same keys
// cannot release them; a holder that lost one key (deleted, then taken by a
// RedisLock) releases the others, reports false, and leaves the new
// holder's key alone.
func TestMultiLockReleaseByNonHolder(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, _ string) {
		keys := multiKeys(t, 3)
		holder, other := newMulti(t, b.store(), keys), newMulti(t, b.store(), keys)
		mustMultiAcquire(t, holder, true)
		token := mustHoldOneToken(t, admin, keys)
		mustMultiRelease(t, other, false)
		if got := mustHoldOneToken(t, admin, keys); got != token {
			t.Fatalf("a non-holder's release changed the keys: %q, was %q", got, token)
		}

		if err := admin.Del(context.Background(), keys[1]).Err(); err != nil {
			t.Fatal(err)
		}
		thief := b.newLock(keys[1])
		thief.SetExpire(30)
		mustAcquire(t, thief, true)
		mustMultiRelease(t, holder, false)
		mustBeFree(t, admin, keys[0], keys[2])
		mustRelease(t, thief, true)
	})
}

// waitUntil polls cond until it holds, failing after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitingFor starts acquire in a goroutine and returns when the waiter is
// registered on key's release channel and has run tries scripts on
// admin's server since it began (so its try after subscribing was refused:
// only a wake or its back-off sends it to try again). The channel carries
// the time it got the lock. The test ends only after the waiter returns;
// its context is cancelled then.
func waitingFor(t *testing.T, admin *redis.Client, store redislock.Store, key string, tries int64,
	acquire func(ctx context.Context) (bool, error)) (<-chan time.Time, time.Time) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	before := redistest.Calls(t, admin, "evalsha", "eval")
	start := time.Now()
	got := make(chan time.Time, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ok, err := acquire(ctx)
		if !ok || err != nil {
			if ctx.Err() == nil {
				t.Errorf("waiting acquire = %v, %v; want true, nil", ok, err)
			}
			return
		}
		got <- time.Now()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	waitUntil(t, "the waiter listens on "+key, func() bool { return redislock.HubWaiters(store, key) == 1 })
	waitUntil(t, "the waiter tried", func() bool { return redistest.Calls(t, admin, "evalsha", "eval")-before >= tries })
	return got, start
}

// mustBeWoken fails unless got delivers before a back-off of the waiter
// that started at start could have ended.
func mustBeWoken(t *testing.T, got <-chan time.Time, start time.Time) {
	t.Helper()
	select {
	case <-got:
	case <-time.After(time.Until(start.Add(backoffFloor))):
		t.Fatalf("the waiter was not woken by the release: still waiting %v after it began", backoffFloor)
	}
}

// TestMultiLockInterop: on both stores, a MultiLock and RedisLocks on its
// keys exclude each other both ways, and each one's release wakes the
// other's waiter (a waiter whose back-off would sleep 5-10 s gets the lock
// before 5 s have passed since it began).
func TestMultiLockInterop(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, _ string) {
		keys := multiKeys(t, 2)
		slow := redislock.WithBackoff(10*time.Second, 10*time.Second)

		// A RedisLock waits for the MultiLock's release.
		m := newMulti(t, b.store(), keys)
		mustMultiAcquire(t, m, true)
		single := b.newLock(keys[1], slow)
		single.SetExpire(30)
		mustAcquire(t, single, false)
		// Its first try is SET NX, its try after subscribing the script.
		got, start := waitingFor(t, admin, b.store(), keys[1], 1, func(ctx context.Context) (bool, error) {
			return single.AcquireWaitCtx(ctx, time.Minute)
		})
		mustMultiRelease(t, m, true)
		mustBeWoken(t, got, start)

		// A MultiLock waits for the RedisLock's release.
		m = newMulti(t, b.store(), keys, slow)
		mustMultiAcquire(t, m, false)
		got, start = waitingFor(t, admin, b.store(), keys[1], 2, func(ctx context.Context) (bool, error) {
			return m.AcquireWaitCtx(ctx, time.Minute)
		})
		mustRelease(t, single, true)
		mustBeWoken(t, got, start)
		mustHoldOneToken(t, admin, keys)
		mustMultiRelease(t, m, true)
	})
}

// TestMultiLockWaiterFollowsRefusingKey: a waiting MultiLock listens to
// the key that refused it: when the first holder releases and a second key
// still refuses, it moves to that key's channel and is woken by its
// release, long before its back-off would have retried.
func TestMultiLockWaiterFollowsRefusingKey(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, _ string) {
		waiter := newMulti(t, b.store(), multiKeys(t, 3), redislock.WithBackoff(10*time.Second, 10*time.Second))
		keys := redislock.MultiLockKeys(waiter)
		first, second := b.newLock(keys[0]), b.newLock(keys[2])
		for _, l := range []*redislock.RedisLock{first, second} {
			l.SetExpire(30)
			mustAcquire(t, l, true)
		}
		got, start := waitingFor(t, admin, b.store(), keys[0], 2, func(ctx context.Context) (bool, error) {
			return waiter.AcquireWaitCtx(ctx, time.Minute)
		})
		before := redistest.Calls(t, admin, "evalsha", "eval")
		mustRelease(t, first, true)
		// The release, the try it woke, and the try after moving.
		waitUntil(t, "the waiter moved to the second key and tried", func() bool {
			return redislock.HubWaiters(b.store(), keys[2]) == 1 && redislock.HubWaiters(b.store(), keys[0]) == 0 &&
				redistest.Calls(t, admin, "evalsha", "eval")-before >= 3
		})
		mustRelease(t, second, true)
		mustBeWoken(t, got, start)
		mustHoldOneToken(t, admin, keys)
		mustMultiRelease(t, waiter, true)
	})
}

// TestMultiLockWatchLosesAnyKey: a watched MultiLock whose first, middle
// or last key is deleted ends its context with ErrLockLost; a watched hold
// whose keys all live outlasts its expiry.
func TestMultiLockWatchLosesAnyKey(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, _ string) {
		keys := multiKeys(t, 3)
		for i := range keys {
			m := newMulti(t, b.store(), keys, redislock.WithExpiry(300*time.Millisecond), redislock.WithTolerance(0))
			mustMultiAcquire(t, m, true)
			ctx := m.Watch(context.Background(), zerolock.RenewEvery(20*time.Millisecond))
			if err := admin.Del(context.Background(), redislock.MultiLockKeys(m)[i]).Err(); err != nil {
				t.Fatal(err)
			}
			if err := waitDone(t, ctx, 5*time.Second); !errors.Is(err, zerolock.ErrLockLost) {
				t.Fatalf("key %d deleted: Watch ended with %v; want ErrLockLost", i, err)
			}
			mustMultiRelease(t, m, false)
		}

		m := newMulti(t, b.store(), keys, redislock.WithExpiry(300*time.Millisecond), redislock.WithTolerance(0))
		mustMultiAcquire(t, m, true)
		ctx := m.Watch(context.Background(), zerolock.RenewEvery(50*time.Millisecond))
		// Poll past the expiry: only renewals can keep the keys.
		for until := time.Now().Add(600 * time.Millisecond); time.Now().Before(until); time.Sleep(20 * time.Millisecond) {
			if ctx.Err() != nil {
				t.Fatalf("Watch of a hold that lives ended: %v", context.Cause(ctx))
			}
		}
		mustHoldOneToken(t, admin, keys)
		mustMultiRelease(t, m, true)
		if cause := context.Cause(ctx); !errors.Is(cause, zerolock.ErrReleased) {
			t.Errorf("Watch after Release: %v; want ErrReleased", cause)
		}
	})
}

// TestMultiLockRefresh: Refresh extends every key while all are held, and
// reports false with a nil error, re-creating nothing, once one is gone.
func TestMultiLockRefresh(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, _ string) {
		ctx := context.Background()
		keys := multiKeys(t, 3)
		m := newMulti(t, b.store(), keys)
		if ok, err := m.RefreshCtx(context.Background()); ok || err != nil {
			t.Fatalf("Refresh() before any acquire = %v, %v; want false, nil", ok, err)
		}
		mustBeFree(t, admin, keys...)
		mustMultiAcquire(t, m, true)
		for _, k := range keys {
			admin.PExpire(ctx, k, time.Second)
		}
		if ok, err := m.RefreshCtx(ctx); !ok || err != nil {
			t.Fatalf("RefreshCtx() of a hold = %v, %v; want true, nil", ok, err)
		}
		for _, k := range keys {
			if ttl := admin.PTTL(ctx, k).Val(); ttl <= time.Second {
				t.Errorf("PTTL of %q after Refresh = %v; want about 30s", k, ttl)
			}
		}
		admin.Del(ctx, keys[2])
		if ok, err := m.RefreshCtx(ctx); ok || err != nil {
			t.Fatalf("RefreshCtx() with a key gone = %v, %v; want false, nil", ok, err)
		}
		mustBeFree(t, admin, keys[2])
		mustMultiRelease(t, m, false)
	})
}

// TestMultiLockNotFencer: fencing is not minted for multi-locks: WithFencing
// is refused (it was ignored before the one option policy), a MultiLock is
// not a zerolock.Fencer, and it writes no key but its own.
func TestMultiLockNotFencer(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	keys := multiKeys(t, 2)
	if m, err := redislock.NewMultiLock(admin, keys, redislock.WithFencing()); m != nil || !errors.Is(err, redislock.ErrOptionNotApplicable) {
		t.Fatalf("NewMultiLock(WithFencing) = %v, %v; want nil, ErrOptionNotApplicable", m, err)
	}
	m := newMulti(t, admin, keys)
	if _, ok := any(m).(zerolock.Fencer); ok {
		t.Fatal("a MultiLock is a zerolock.Fencer")
	}
	mustMultiAcquire(t, m, true)
	if n := admin.DBSize(context.Background()).Val(); n != int64(len(keys)) {
		t.Errorf("DBSIZE = %d after a MultiLock acquired %d keys; want no other key", n, len(keys))
	}
	mustMultiRelease(t, m, true)
}

// TestMultiLockWakeups: a release announces each key it frees, once, and
// WithoutWakeups none.
func TestMultiLockWakeups(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, _ string) {
		keys := multiKeys(t, 3)
		for _, tc := range []struct {
			opts []redislock.Option
			want int64
		}{{nil, 3}, {[]redislock.Option{redislock.WithoutWakeups()}, 0}} {
			m := newMulti(t, b.store(), keys, tc.opts...)
			mustMultiAcquire(t, m, true)
			before := redistest.Calls(t, admin, "spublish", "publish")
			mustMultiRelease(t, m, true)
			if got := redistest.Calls(t, admin, "spublish", "publish") - before; got != tc.want {
				t.Errorf("a release with %d options published %d times; want %d", len(tc.opts), got, tc.want)
			}
		}
	})
}

// spyKey carries a *scriptSpy in the context of a lock's calls.
type spyKey struct{}

// A scriptSpy learns, from the scripts a lock sends with its context, the
// lock's token (every lock script's first argument) and how many scripts
// Redis ran.
type scriptSpy struct {
	mu      sync.Mutex
	token   string
	scripts int
}

func (s *scriptSpy) get() (string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.token, s.scripts
}

// interceptKey carries an intercept in the context of a lock's calls.
type interceptKey struct{}

// An intercept stands around each command a lock sends with a context
// that carries it: send passes the command on to Redis, and what the
// intercept returns is the command's error (set it on cmd as well). Tests
// use it to hold a command back or to lose its reply.
type intercept func(cmd redis.Cmder, send func() error) error

// withIntercept returns ctx carrying f for spyHook.
func withIntercept(ctx context.Context, f intercept) context.Context {
	return context.WithValue(ctx, interceptKey{}, f)
}

// spyHook is the redis.Hook that feeds the scriptSpy of a call's context
// and runs its intercept.
type spyHook struct{}

func (spyHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (spyHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		send := func() error { return next(ctx, cmd) }
		var err error
		if f, ok := ctx.Value(interceptKey{}).(intercept); ok {
			err = f(cmd, send)
		} else {
			err = send()
		}
		if spy, ok := ctx.Value(spyKey{}).(*scriptSpy); ok {
			args := cmd.Args()
			if name := strings.ToLower(fmt.Sprint(args[0])); name == "eval" || name == "evalsha" {
				n, _ := args[2].(int)
				spy.mu.Lock()
				spy.token = fmt.Sprint(args[3+n])
				if err == nil { // not a NOSCRIPT answer, which go-redis follows with EVAL
					spy.scripts++
				}
				spy.mu.Unlock()
			}
		}
		return err
	}
}

func (spyHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// spiedNodeStores are both stores on srv with spyHook installed. go-zero
// keeps one client per address for the process, made with the options of
// its first store: so srv must be new to go-zero.
func spiedNodeStores(t *testing.T, srv *redistest.Server) map[string]redislock.Store {
	t.Helper()
	client := srv.Client(t)
	client.AddHook(spyHook{})
	zstore := zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	}, zredis.WithHook(spyHook{}))
	return map[string]redislock.Store{"go-redis": client, "go-zero": redislock.GoZeroStore(zstore)}
}

// partialRun is what neverPartial counted.
type partialRun struct {
	acquired, refused, violations atomic.Int64
}

// neverPartial is the exact invariant checker of multi-locks: goroutines
// take random pairs and triples of keys, each acquisition a new MultiLock,
// for d. Each key has an owner slot that a holder claims with a
// compare-and-swap after its acquire returns true and frees before its
// release: a claim that finds the slot taken is a key held twice. After a
// refused acquire (AcquireCtx, or AcquireWaitCtx whose wait ran out), GET
// on the server checks that none of the lock's keys holds its token: a
// refusal took nothing, or gave back all it took.
func neverPartial(t *testing.T, store redislock.Store, admin redis.Cmdable, keys []string, d time.Duration) *partialRun {
	t.Helper()
	const goroutines = 8
	owners := make([]atomic.Int64, len(keys))
	var (
		run partialRun
		wg  sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	for g := 1; g <= goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), uint64(len(keys))))
			for time.Now().Before(deadline) && !t.Failed() {
				picked := r.Perm(len(keys))[:2+r.IntN(2)]
				set := make([]string, len(picked))
				for i, k := range picked {
					set[i] = keys[k]
				}
				m, err := redislock.NewMultiLock(store, set, redislock.WithExpiry(10*time.Second))
				if err != nil {
					t.Error(err)
					return
				}
				spy := new(scriptSpy)
				ctx := context.WithValue(context.Background(), spyKey{}, spy)
				var ok bool
				if r.IntN(2) == 0 {
					ok, err = m.AcquireCtx(ctx)
				} else {
					ok, err = m.AcquireWaitCtx(ctx, time.Duration(1+r.IntN(20))*time.Millisecond)
				}
				if err != nil {
					t.Errorf("acquire %q: %v", set, err)
					return
				}
				if !ok {
					run.refused.Add(1)
					token, _ := spy.get()
					for _, k := range set {
						v, err := admin.Get(context.Background(), k).Result()
						if err != nil && !errors.Is(err, redis.Nil) {
							t.Errorf("GET %q: %v", k, err)
							return
						}
						if v == token {
							t.Errorf("a refused acquire of %q left %q holding its token", set, k)
							run.violations.Add(1)
						}
					}
					continue
				}
				run.acquired.Add(1)
				for _, k := range picked {
					if !owners[k].CompareAndSwap(0, int64(g)) {
						t.Errorf("key %q held by goroutines %d and %d at once", keys[k], owners[k].Load(), g)
						run.violations.Add(1)
					}
				}
				time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond) // the critical section
				for _, k := range picked {
					owners[k].CompareAndSwap(int64(g), 0)
				}
				if ok, err := m.ReleaseCtx(ctx); !ok || err != nil {
					t.Errorf("release %q = %v, %v", set, ok, err)
				}
			}
		}()
	}
	wg.Wait()
	if run.acquired.Load() == 0 || run.refused.Load() == 0 {
		t.Errorf("%d acquisitions and %d refusals: the check needs both", run.acquired.Load(), run.refused.Load())
	}
	return &run
}

// TestMultiLockNeverPartial runs neverPartial on a real redis-server, on
// both stores, for a second each, over 5 keys.
func TestMultiLockNeverPartial(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	for name, store := range spiedNodeStores(t, srv) {
		t.Run(name, func(t *testing.T) {
			r := neverPartial(t, store, admin, multiKeys(t, 5), time.Second)
			t.Logf("%d acquisitions, %d refusals, %d violations", r.acquired.Load(), r.refused.Load(), r.violations.Load())
		})
	}
}

// TestMultiLockRing: on a go-redis Ring, which places keys on its shards
// by hash tag, every key of a MultiLock lands on the shard the Ring gives
// it (where a RedisLock on the Ring finds it), one script per shard.
func TestMultiLockRing(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr(), "b": b.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	keys := multiKeys(t, 12)
	m := newMulti(t, ring, keys)
	mustMultiAcquire(t, m, true)
	mustHoldOneToken(t, ring, keys)
	for _, k := range keys {
		mustAcquire(t, redislock.New(ring, k), false)
	}
	na, nb := a.Client(t).DBSize(context.Background()).Val(), b.Client(t).DBSize(context.Background()).Val()
	if na == 0 || nb == 0 || na+nb != int64(len(keys)) {
		t.Errorf("%d and %d keys on the shards; want the %d keys of the lock spread over both", na, nb, len(keys))
	}
	mustMultiRelease(t, m, true)
	mustBeFree(t, ring, keys...)
}
