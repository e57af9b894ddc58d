package redislock_test

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
	"github.com/zerolock/zerolock/redislock/internal/gozero"
)

// TestGoZeroCycleCommands: on go-zero's store a fresh acquire is one
// SET NX PX (a status reply: no nil for go-redis to run through its retry
// checks) and a release one run of release.lua; a refused SET NX is
// followed by acquire.lua, which tells our own resent hold from another's,
// and the instance's next tries send setnxget.lua (one round trip with the
// holder's answer) until one succeeds. A script goes by EVAL, which cannot
// answer NOSCRIPT (go-zero's breaker counts it), until the server holds
// it, then by EVALSHA (TestGoZeroScriptCache).
func TestGoZeroCycleCommands(t *testing.T) {
	srv := redistest.Start(t)
	sent := &commandLog{}
	// The first store of an address makes go-zero's client for it, with
	// this store's hooks.
	store := zredis.New(srv.Addr(), zredis.WithIdentity(), zredis.WithHook(sent))
	key := "zerolock-test:" + t.Name()
	lock := redislock.NewRedisLock(store, key)
	lock.SetExpire(5)
	contender := redislock.NewRedisLock(store, key)
	contender.SetExpire(5)
	mustAcquire(t, lock, true) // the connection's handshake
	mustRelease(t, lock, true)
	for _, step := range []struct {
		name string
		call func(t *testing.T)
		want []string
	}{
		{"a fresh acquire", func(t *testing.T) { mustAcquire(t, lock, true) }, []string{"set"}},
		// A script goes by EVAL, then is loaded (SCRIPT LOAD), then goes by
		// EVALSHA.
		{"a re-entrant acquire", func(t *testing.T) { mustAcquire(t, lock, true) }, []string{"eval", "script"}},
		{"a refused acquire", func(t *testing.T) { mustAcquire(t, contender, false) }, []string{"set", "evalsha"}},
		{"the next refused acquire", func(t *testing.T) { mustAcquire(t, contender, false) }, []string{"eval", "script"}},
		{"a release", func(t *testing.T) { mustRelease(t, lock, true) }, []string{"evalsha"}},
		{"an acquire after refusals", func(t *testing.T) { mustAcquire(t, contender, true) }, []string{"evalsha"}},
		{"a release by the contender", func(t *testing.T) { mustRelease(t, contender, true) }, []string{"evalsha"}},
		// A new lock of a key refused within the last second asks
		// setnxget.lua first (one round trip when refused too)...
		{"a new lock's cycle after refusals", func(t *testing.T) {
			l := redislock.NewRedisLock(store, key)
			l.SetExpire(5)
			mustAcquire(t, l, true)
			mustRelease(t, l, true)
		}, []string{"evalsha", "evalsha"}},
		// ...and once the store has forgotten them, a plain SET NX.
		{"the contender's next fresh acquire, refusals forgotten", func(t *testing.T) {
			defer gozero.SetRefusalMemory(0)()
			mustAcquire(t, contender, true)
		}, []string{"set"}},
	} {
		sent.reset()
		step.call(t)
		if got := sent.names(); !slices.Equal(got, step.want) {
			t.Fatalf("%s sent %v; want %v", step.name, got, step.want)
		}
	}
}

// TestGoZeroFreshLocksRefusedInOneRoundTrip: on go-zero's store, once a
// lock of a key was refused, new locks of it (a middleware makes one per
// request) are refused in one round trip (setnxget.lua names the holder)
// rather than a SET NX and acquire.lua after it.
func TestGoZeroFreshLocksRefusedInOneRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	sent := &commandLog{}
	store := zredis.New(srv.Addr(), zredis.WithIdentity(), zredis.WithHook(sent))
	key := "zerolock-test:" + t.Name()
	holder := redislock.NewRedisLock(store, key)
	holder.SetExpire(5)
	mustAcquire(t, holder, true)
	fresh := func() *redislock.RedisLock {
		l := redislock.NewRedisLock(store, key)
		l.SetExpire(5)
		return l
	}
	mustAcquire(t, fresh(), false) // the first refusal: SET NX, then acquire.lua
	mustAcquire(t, fresh(), false) // setnxget.lua's first run: EVAL, SCRIPT LOAD
	for i := range 5 {
		sent.reset()
		mustAcquire(t, fresh(), false)
		if got := sent.names(); !slices.Equal(got, []string{"evalsha"}) {
			t.Fatalf("refused new lock %d sent %v; want one EVALSHA", i, got)
		}
	}
}

// commandLog is a hook that records the names of the commands a client
// sends.
type commandLog struct {
	mu   sync.Mutex
	sent []string
}

func (l *commandLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent = nil
}

func (l *commandLog) names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.sent)
}

func (l *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook records every command but a new connection's handshake
// (HELLO, CLIENT SETINFO), which go-redis sends whenever its pool dials,
// not on the lock's behalf.
func (l *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name != "hello" && name != "client" {
			l.mu.Lock()
			l.sent = append(l.sent, name)
			l.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (l *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// resendHook sends each command of a lock twice and answers the second,
// as go-redis does when the first reply is lost to a reset connection
// (go-zero's client resends up to three times and cannot be told not to).
type resendHook struct{ resent *atomic.Int64 }

func (resendHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h resendHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "hello" || name == "client" {
			return next(ctx, cmd)
		}
		_ = next(ctx, cmd)
		h.resent.Add(1)
		return next(ctx, cmd)
	}
}

func (resendHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestGoZeroResentAcquireIsAcquired: on go-zero's store, an acquire whose
// command was sent twice reports the lock it took, and holds it: the
// resend finds our own token, which the script recognises where SET NX
// would answer "not set" and leave the key held by nobody who knows it.
func TestGoZeroResentAcquireIsAcquired(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	var resent atomic.Int64
	// The first store of an address makes go-zero's client for it, with
	// this store's hooks.
	store := zredis.New(srv.Addr(), zredis.WithIdentity(), zredis.WithHook(resendHook{&resent}))
	key := "zerolock-test:" + t.Name()
	lock := redislock.NewRedisLock(store, key)
	lock.SetExpire(5)
	mustAcquire(t, lock, true)
	if resent.Load() == 0 {
		t.Fatal("the acquire was not resent: the hook is not on go-zero's client")
	}
	mustAcquire(t, redislock.NewRedisLock(store, key), false)
	if ttl := admin.PTTL(context.Background(), key).Val(); ttl <= 0 {
		t.Fatalf("PTTL = %v; the held key must expire", ttl)
	}
	// A resent release deletes the key once and answers the resend's 0: the
	// lock is not ours afterwards either way (ReleaseCtx's doc).
	if _, err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	if n := admin.Exists(context.Background(), key).Val(); n != 0 {
		t.Fatal("the key is still there after the release")
	}
}

// TestGoZeroCycleAllocatesNoMoreThanGoZero: on one go-zero store, a
// zerolock cycle (acquire and release) allocates no more than go-zero's
// own RedisLock's. Both pay go-zero's hooks (span, metrics, breaker) on
// each of their two commands; what is left is each lock's own.
func TestGoZeroCycleAllocatesNoMoreThanGoZero(t *testing.T) {
	srv := redistest.Start(t)
	store := newGoZeroStore(t, srv)
	ctx := context.Background()
	ours := redislock.NewRedisLock(store, "zerolock-test:"+t.Name()+":ours")
	ours.SetExpire(5)
	theirs := zredis.NewRedisLock(store, "zerolock-test:"+t.Name()+":theirs")
	theirs.SetExpire(5)
	measure := func(name string, acquire, release func(context.Context) (bool, error)) float64 {
		return testing.AllocsPerRun(200, func() {
			if ok, err := acquire(ctx); !ok || err != nil {
				t.Fatalf("%s acquire = %v, %v", name, ok, err)
			}
			if ok, err := release(ctx); !ok || err != nil {
				t.Fatalf("%s release = %v, %v", name, ok, err)
			}
		})
	}
	got := measure("zerolock", ours.AcquireCtx, ours.ReleaseCtx)
	want := measure("go-zero", theirs.AcquireCtx, theirs.ReleaseCtx)
	t.Logf("allocations per cycle: zerolock %.0f, go-zero's RedisLock %.0f", got, want)
	if got > want {
		t.Fatalf("zerolock's cycle allocates %.0f times, go-zero's RedisLock's %.0f", got, want)
	}
}

// TestGoZeroBefore7: a server that refuses SET with both NX and GET (Redis
// before 7.0: "ERR syntax error", raised from setnxget.lua) gets acquire.lua
// instead, and the store's locks stop sending setnxget.lua after the first
// refusal (go-zero's breaker counts each): the rival, refused by the held
// key, steers the holder's next acquire to it, which is refused once; then
// both go by plain SET NX PX or acquire.lua.
func TestGoZeroBefore7(t *testing.T) {
	srv := redistest.Start(t)
	src, err := os.ReadFile("setnxget.lua")
	if err != nil {
		t.Fatal(err)
	}
	refuse := &refuseScriptHook{code: redislock.LuaCode(string(src))}
	store := zredis.New(srv.Addr(), zredis.WithIdentity(), zredis.WithHook(refuse))
	key := "zerolock-test:" + t.Name()
	lock := redislock.NewRedisLock(store, key)
	lock.SetExpire(5)
	rival := redislock.NewRedisLock(store, key)
	rival.SetExpire(5)
	for i := 0; i < 3; i++ {
		mustAcquire(t, lock, true)
		mustAcquire(t, rival, false)
		mustRelease(t, lock, true)
	}
	if n := refuse.refused.Load(); n != 1 {
		t.Fatalf("setnxget.lua refused %d times, want once for the store", n)
	}
	// Once the rival acquires (by the script, on this server), its next
	// fresh acquire is a plain SET NX PX again: no script.
	admin := srv.Client(t)
	mustAcquire(t, rival, true)
	mustRelease(t, rival, true)
	scripts := redistest.Calls(t, admin, "eval", "evalsha")
	mustAcquire(t, rival, true)
	if n := redistest.Calls(t, admin, "eval", "evalsha") - scripts; n != 0 {
		t.Fatalf("the rival's fresh acquire after acquiring ran %d scripts, want 0 (SET NX PX)", n)
	}
	mustRelease(t, rival, true)
}

// refuseScriptHook answers EVAL of code as Redis 6.2 answers a script whose
// SET has both NX and GET, without sending it.
type refuseScriptHook struct {
	code    string
	refused atomic.Int64
}

func (h *refuseScriptHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *refuseScriptHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if args := cmd.Args(); cmd.Name() == "eval" && len(args) > 1 && args[1] == h.code {
			h.refused.Add(1)
			err := replyError("ERR Error running script (call to f_0123): @user_script:11: ERR syntax error")
			cmd.SetErr(err)
			return err
		}
		return next(ctx, cmd)
	}
}

func (h *refuseScriptHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
