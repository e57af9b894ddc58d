package redislock

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/observe/lockobs"
	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/deadline"
	"github.com/zerolock/zerolock/redislock/internal/hub"
	"github.com/zerolock/zerolock/redislock/internal/native"
	"github.com/zerolock/zerolock/redislock/internal/slot"
)

// A RedisLock is a lock on one Redis key, identified by a random token.
// It is safe for concurrent use; all its methods may be called from several
// goroutines, and acquiring again while holding refreshes the expiry.
type RedisLock struct {
	conn   conn.Conn // the store, probed once
	setGet *setGetSupport
	// guard, fencing and refusedLast share a word, which with the other
	// fields' order keeps a RedisLock in the allocator's 256-byte class
	// (BenchmarkConstruct): a lock made per request allocates it each time.
	guard   deadline.Guard // WithDeadlineGuard
	fencing bool           // WithFencing
	quiet   bool           // WithoutWakeups
	// refusedLast: this instance was refused on go-zero's store and has
	// not acquired since, so its next fast try sends setnxget.lua rather
	// than SET NX (see setNXPlain).
	refusedLast atomic.Bool
	obs         *lockobs.Instruments // nil for a RedLock's node locks: the RedLock reports
	more        *lockMore            // the options a try-lock seldom reads

	// Arguments built once, so that a lock cycle does not allocate them.
	// keyArray is {key}, release.lua's and the other scripts' keys, and
	// argArray the key and token boxed once for every command that sends
	// them, then release.lua's further argument: {key, token}, or {key,
	// token, channel} for a key the script cannot name the channel of, or
	// {key, token, ""} WithoutWakeups (see releaseArgs); ownSetGet is
	// setGet when the options share none: part of the lock's one
	// allocation rather than allocations of their own (BenchmarkConstruct).
	keyArray  [1]string
	argArray  [3]any
	argc      int8 // how many of argArray release.lua takes after the key
	ownSetGet setGetSupport

	fence   atomic.Int64                // fencing token of the current hold
	acqCmds atomic.Pointer[acquireCmds] // built once per expiry, when needed
	state   holdState

	holdExpiry // the expiry SetExpire sets, and the tolerance
	keeper     // the watchdog and when the hold began
}

// lockMore is what a lock's options set that a try-lock with the defaults
// seldom needs. Locks share one wherever nothing in it depends on the key:
// those with the default back-off, no replica acknowledgements, no fencing
// and wake-ups share defaultMore, and a Backend's locks without fencing
// share the Backend's (see moreFor), so that a lock made per request is
// one allocation of 256 bytes. Nothing writes a lockMore once built.
type lockMore struct {
	waitOpts    waitOptions
	flagPX      int64 // how long a waiting acquire's flag lives, in ms
	acks        int   // WithReplicaAcks
	acksTimeout time.Duration
	fenceKeys   []string        // {key, fencing counter}, WithFencing
	native      *native.Release // the store's compare-and-delete, WithoutWakeups
}

// defaultMore is the lockMore of every lock with the default back-off, no
// replica acknowledgements, no fencing and wake-ups (not WithoutWakeups).
var defaultMore = newLockMore(nil, "", &options{wait: defaultWaitOptions()})

// moreFor returns the lockMore of a lock on key in c made with o: o.more
// (a Backend's, built by moreFor for its options) when o has it and no
// fencing, else defaultMore when it applies, else one of its own.
func moreFor(c *conn.Conn, key string, o *options) *lockMore {
	switch {
	case o.fencing:
		return newLockMore(c, key, o)
	case o.more != nil:
		return o.more
	case o.wait == defaultMore.waitOpts && o.acks == 0 && !o.quietRelease:
		return defaultMore
	}
	return newLockMore(c, key, o)
}

func newLockMore(c *conn.Conn, key string, o *options) *lockMore {
	m := &lockMore{
		waitOpts:    o.wait,
		flagPX:      waiterFlagTTL(o.wait).Milliseconds(),
		acks:        o.acks,
		acksTimeout: o.acksTimeout,
	}
	if o.fencing {
		m.fenceKeys = []string{key, slot.Companion(key, "zerolock.fence")}
	}
	if o.quietRelease {
		m.native = native.For(c)
	}
	return m
}

// NewRedisLock returns a lock on key in go-zero's store, with go-zero's
// defaults: no expiry beyond the 500 ms tolerance until SetExpire is called.
func NewRedisLock(store *zredis.Redis, key string, opts ...Option) *RedisLock {
	return New(GoZeroStore(store), key, opts...)
}

// New returns a lock on key in any Store: a go-redis client (a
// *redis.Client, a *redis.ClusterClient, or the Sentinel client
// redis.NewFailoverClient returns; a ClusterClient for go-redis's failover
// cluster mode) or go-zero's store through GoZeroStore.
func New(store Store, key string, opts ...Option) *RedisLock {
	o := applyOptions(opts)
	return newObservedLock(conn.Wrap(store), key, &o)
}

// newObservedLock builds a lock that reports to its name's instruments.
func newObservedLock(c conn.Conn, key string, o *options) *RedisLock {
	rl := newLock(c, key, newLockToken(o.quietRelease), o)
	rl.obs = mutexInstruments(o.name)
	rl.refused = o.refuse(mutexRefuses, "a RedisLock", key, nil)
	return rl
}

// mutexInstruments is lockobs.For of the RedisLocks called name. The
// unnamed locks' (most locks; the middleware makes one per request) are
// looked up once: lockobs.For hashes its three strings on every call, and
// its registry keeps what it returned for the life of the process.
func mutexInstruments(name string) *lockobs.Instruments {
	if name != "" {
		return lockobs.For(backendRedis, kindMutex, name)
	}
	return unnamedMutex()
}

var unnamedMutex = sync.OnceValue(func() *lockobs.Instruments {
	return lockobs.For(backendRedis, kindMutex, "")
})

// newLock builds a lock with a given token that reports nothing: a
// RedLock's node locks share one token, and the RedLock reports for them.
func newLock(c conn.Conn, key, token string, o *options) *RedisLock {
	rl := &RedisLock{
		conn:    c,
		fencing: o.fencing,
		setGet:  o.setGet,
		more:    moreFor(&c, key, o),
	}
	rl.holdExpiry.init(o)
	rl.keyArray[0], rl.argArray[0], rl.argArray[1], rl.argc = key, key, token, 1
	switch {
	case o.quietRelease:
		rl.quiet = true
		rl.argArray[2], rl.argc = "", 2 // announce nothing
	case !slot.NamedByKey(key):
		// release.lua names the channel after the key, unless the key
		// needs a computed hash tag.
		rl.argArray[2], rl.argc = hub.Channel(key), 2
	}
	if rl.setGet == nil {
		rl.setGet = &rl.ownSetGet
	}
	rl.guard = rl.conn.Guard(o.deadlineGuard)
	return rl
}

// lockKeys is {key}, the keys of the scripts that touch the lock alone,
// release.lua's among them.
func (rl *RedisLock) lockKeys() []string { return rl.keyArray[:1:1] }

// releaseArgs is release.lua's arguments: {token}, {token, channel} when
// the script cannot name the key's release channel, {token, ""}
// WithoutWakeups (nothing announced: see release.lua).
func (rl *RedisLock) releaseArgs() []any {
	return rl.argArray[1 : 1+rl.argc : 1+rl.argc]
}

// releaseChannel is the channel the lock's releases are announced on,
// where its waiters listen.
func (rl *RedisLock) releaseChannel() string {
	return hub.Channel(rl.Key())
}

// markWins reports whether a waiting acquire's win takes the key marked as
// waited on (see acquire.lua): a lock that announces its releases does, a
// lock WithoutWakeups has nothing to announce.
func (rl *RedisLock) markWins() bool { return !rl.quiet }

// Key returns the Redis key of the lock.
func (rl *RedisLock) Key() string {
	return rl.keyArray[0]
}

// tokenArg is the lock's token, boxed once for the commands that send it.
func (rl *RedisLock) tokenArg() any { return rl.argArray[1] }

// keyArg is the lock's key, boxed once for the commands that send it.
func (rl *RedisLock) keyArg() any { return rl.argArray[0] }

// keyedReleaseArgs is the key, then releaseArgs: release.lua's keys and
// arguments, all boxed (conn.EvalOnceBoxed).
func (rl *RedisLock) keyedReleaseArgs() []any {
	return rl.argArray[: 1+rl.argc : 1+rl.argc]
}

// token is the lock's token.
func (rl *RedisLock) token() string { return rl.argArray[1].(string) }

// SetExpire sets the expiry in whole seconds, as go-zero's RedisLock does.
// It applies to the next acquire. A negative value makes AcquireCtx return
// ErrInvalidExpiry.
func (rl *RedisLock) SetExpire(seconds int) {
	rl.SetExpiry(time.Duration(seconds) * time.Second)
}

// SetExpiry sets the expiry with millisecond precision (it is rounded up to
// whole milliseconds). It applies to the next acquire. A negative value
// makes AcquireCtx return ErrInvalidExpiry.
func (rl *RedisLock) SetExpiry(expiry time.Duration) {
	rl.expiry.Store(int64(expiry))
}

// Acquire is AcquireCtx with context.Background().
func (rl *RedisLock) Acquire() (bool, error) {
	return rl.AcquireCtx(context.Background())
}

// AcquireCtx tries once to take the lock. It reports true when the lock is
// held by this instance afterwards (taken, or already held and its expiry
// refreshed) and false, with a nil error, when another holder has it.
//
// It returns ErrInvalidExpiry for a negative or empty expiry, and a wrapped
// store error when Redis cannot answer; errors.Is(err, ctx.Err()) holds when
// the context ended. With WithDeadlineGuard it returns when ctx ends even if
// the client would wait longer. After an error the lock may or may not be
// held; a later AcquireCtx or ReleaseCtx on the same instance settles it.
func (rl *RedisLock) AcquireCtx(ctx context.Context) (bool, error) {
	ctx, a := rl.obs.StartAcquire(ctx, false)
	ok, err := rl.acquire(ctx)
	a.End(tryOutcome(ok, err), rl.heldFence(ok), err)
	return ok, err
}

// acquire is AcquireCtx unobserved: the first try of a waiting acquire,
// which is observed as a whole.
func (rl *RedisLock) acquire(ctx context.Context) (bool, error) {
	px, err := rl.px()
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, rl.wrap(ctx, "acquire", err)
	}

	ok, _, err := rl.try(ctx, px, false)
	if err != nil {
		return false, rl.wrap(ctx, "acquire", err)
	}
	return ok, nil
}

// try makes one acquire attempt, keeping the bookkeeping of which path the
// next one may take. waiting (a waiting acquire's try, made after it
// subscribed to the release channel) forces the re-entrant script, whose
// refusal carries the holder's remaining time (waiters sleep no longer
// than it) and marks the hold as waited on (see waiters.go), so that the
// holder's release announces itself, and whose win takes the key marked;
// otherwise an instance that cannot hold the key uses
// SET NX PX, sent once (go-redis), or SET NX PX GET (stores that resend),
// and on go-zero's store SET NX PX until a refusal, then SET NX PX GET in
// a script (see setNXPlain and setnxget.lua).
func (rl *RedisLock) try(ctx context.Context, px time.Duration, waiting bool) (bool, time.Duration, error) {
	sent := monoNow()
	reentrant, seen := rl.state.beginAcquire()
	var (
		r   attempt
		err error
	)
	if rl.guard == deadline.None {
		// Called directly: a closure handed to deadline.Within escapes to its
		// goroutine, an allocation on every try.
		r = rl.attempt(ctx, px, waiting || reentrant, waiting, seen)
	} else {
		r, err = deadline.Within(ctx, rl.guard, func() attempt {
			return rl.attempt(ctx, px, waiting || reentrant, waiting, seen)
		})
	}
	if err == nil {
		err = r.err
	}
	ok := r.ok && err == nil
	rl.state.endAcquire(seen, ok || err != nil)
	switch {
	case ok:
		rl.noteAcquired(sent, px)
	case err == nil && rl.state.gained():
		// An instance that never acquired has no hold to forget: a lock
		// made per request and refused (a busy key) skips the keeper.
		rl.noteRefused()
	}
	return ok, r.holderTTL, err
}

// attempt is what one acquire attempt learned.
type attempt struct {
	ok        bool
	holderTTL time.Duration
	err       error
}

// attempt sends one acquire by the path the lock's state allows (script
// forces the re-entrant script, waiting also marks the hold); seen is
// the hold state's count when it began.
func (rl *RedisLock) attempt(ctx context.Context, px time.Duration, script, waiting bool, seen uint64) attempt {
	var r attempt
	switch {
	case rl.more.acks > 0:
		r.ok, r.err = rl.acquireReplicated(ctx, px, waiting)
	case script || rl.fencing:
		r.ok, r.holderTTL, r.err = rl.acquireScript(ctx, px, waiting)
	case rl.conn.IsGoZero() && !rl.refusedLast.Load() && !rl.conn.GoZero.RecentlyRefused(rl.Key()):
		// Before setGet.refused: SET NX PX without GET works on every server.
		var refused bool
		r.ok, refused, r.err = rl.setNXPlain(ctx, px, seen)
		if refused {
			// Held by another or by us (a resent SET, an overlapping
			// acquire on this instance): the script tells them apart.
			r.ok, r.holderTTL, r.err = rl.acquireScript(ctx, px, false)
		}
	case rl.setGet.refused.Load() || rl.conn.IsGoZero() && rl.conn.GoZero.NoSetGet():
		r.ok, r.holderTTL, r.err = rl.acquireScript(ctx, px, waiting)
	case rl.conn.Proc != nil:
		r.ok, r.err = rl.setNXOnce(ctx, px)
		if r.err == nil && !r.ok && rl.state.overlapped(seen) {
			// Another acquire on this instance ran meanwhile and may have
			// written our own token, which SET NX cannot recognise.
			r.ok, r.holderTTL, r.err = rl.acquireScript(ctx, px, false)
		}
	default:
		var mine, refused bool
		r.ok, mine, refused, r.err = rl.setNXGet(ctx, px)
		if mine || refused {
			// Our own token: a retried send or an overlapping acquire on
			// this instance set it. The script refreshes its expiry, as a
			// re-entrant acquire does.
			r.ok, r.holderTTL, r.err = rl.acquireScript(ctx, px, false)
		}
	}
	if r.ok && rl.refusedLast.Load() {
		rl.refusedLast.Store(false) // acquired, by whichever path: SET NX again
	}
	return r
}

// acquireScript runs the re-entrant acquire (minting a fencing token when
// fencing is on). When the lock is held by another, it reports the
// holder's remaining time, which a waiter sleeps no longer than, and a
// waiting acquire's refusal marks the hold (or sets the waiter flag: see
// waiters.go).
func (rl *RedisLock) acquireScript(ctx context.Context, px time.Duration, waiting bool) (bool, time.Duration, error) {
	var (
		reply any
		err   error
	)
	if waiting {
		s := acquireScript
		if rl.fencing {
			s = fenceScript
		}
		reply, err = rl.conn.Eval(ctx, s, rl.waitingKeys(), rl.waitingArgs(px)...)
	} else {
		reply, err = rl.evalAcquire(ctx, px)
	}
	if err != nil {
		return false, 0, err
	}
	ok, err := rl.parseAcquire(reply)
	if err != nil || ok {
		return ok, 0, err
	}
	return false, holderTTL(reply), nil
}

// parseAcquire reads the reply of acquire.lua ("OK" or the holder's PTTL)
// or fence.lua ({1, fence} or {0, PTTL}), recording a minted fence.
func (rl *RedisLock) parseAcquire(reply any) (bool, error) {
	switch reply := reply.(type) {
	case string:
		if reply == "OK" {
			return true, nil
		}
	case int64:
		return false, nil
	case []any:
		if len(reply) == 2 {
			flag, okFlag := reply[0].(int64)
			n, okN := reply[1].(int64)
			if okFlag && okN && flag == 1 {
				rl.fence.Store(n)
				return true, nil
			}
			if okFlag && okN {
				return false, nil
			}
		}
	}
	return false, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
}

// holderTTL is the holder's remaining time in a refusing acquire reply.
func holderTTL(reply any) time.Duration {
	switch reply := reply.(type) {
	case int64:
		return time.Duration(reply) * time.Millisecond
	case []any:
		if n, ok := reply[1].(int64); ok {
			return time.Duration(n) * time.Millisecond
		}
	}
	return 0
}

// Fence returns the fencing token of the lock's current hold: a number
// greater than every token issued before for the key, to hand to storage
// that rejects writes carrying an older one. It is 0 unless the lock was
// made WithFencing and has been acquired.
func (rl *RedisLock) Fence() int64 {
	return rl.fence.Load()
}

// heldFence is the fencing token an acquire that ended ok reports: the
// hold's, 0 when not acquired.
func (rl *RedisLock) heldFence(ok bool) int64 {
	if !ok {
		return 0
	}
	return rl.fence.Load()
}

// Release is ReleaseCtx with context.Background().
func (rl *RedisLock) Release() (bool, error) {
	return rl.ReleaseCtx(context.Background())
}

// ReleaseCtx deletes the lock's key if, and only if, it still holds this
// instance's token, stops its watchdog, and wakes the waiters of other
// instances when one is waiting (unless WithoutWakeups: then, on a server
// with a compare-and-delete command, Valkey 9's DELIFEQ or Redis 8.4's
// DELEX IFEQ, it sends that command instead of a script). It reports
// false, with a nil error, when the lock was not held (never taken,
// expired, or taken by another holder since). On go-zero's store it may
// also answer false when go-zero's client resent a release whose first
// reply was lost (on go-redis the release is sent once, and a lost reply
// is an error): true or false, the lock is not this instance's afterwards.
//
// It returns a wrapped store error when Redis cannot answer;
// errors.Is(err, ctx.Err()) holds when the context ended; with
// WithDeadlineGuard it returns when ctx ends even if the client would wait
// longer. Callers that release on the way out of a request should pass a
// context that is not already cancelled, such as context.WithoutCancel(ctx).
func (rl *RedisLock) ReleaseCtx(ctx context.Context) (bool, error) {
	began := rl.holdBegan()
	ok, err := rl.release(ctx)
	if err == nil {
		observeRelease(rl.obs, began, ok)
	}
	return ok, err
}

// release is ReleaseCtx unobserved: the release of a hold the caller never
// saw (an acquire too few replicas acknowledged).
func (rl *RedisLock) release(ctx context.Context) (bool, error) {
	// The watchdog stops first, even when ctx has ended: a release that
	// cannot reach Redis must not leave it renewing.
	rl.stopWatchdog(ctx, zerolock.ErrReleased)
	if err := ctx.Err(); err != nil {
		return false, rl.wrap(ctx, "release", err)
	}
	seen := rl.state.beginRelease()
	var (
		r   any
		err error
	)
	if rl.guard == deadline.None {
		// Called directly, as in try: a closure handed to deadline.Within escapes
		// to its goroutine, an allocation on every release.
		r, err = rl.sendRelease(ctx)
	} else {
		var got reply
		got, err = deadline.Within(ctx, rl.guard, func() reply {
			val, err := rl.sendRelease(ctx)
			return reply{val, err}
		})
		if err == nil {
			r, err = got.val, got.err
		}
	}
	if err != nil {
		return false, rl.wrap(ctx, "release", err)
	}
	if rl.state.endRelease(seen) {
		rl.forget()
	}
	n, ok := r.(int64)
	if !ok {
		return false, rl.wrap(ctx, "release", fmt.Errorf("%w: %v", ErrUnexpectedReply, r))
	}
	return n == 1, nil
}

// TTL reports how long the lock's key has left to live as Redis sees it,
// whoever holds it, and 0 when nobody does. It returns ErrNoExpiry when the
// key exists without an expiry, and a wrapped store error when Redis cannot
// answer.
func (rl *RedisLock) TTL(ctx context.Context) (time.Duration, error) {
	cmd, err := deadline.Within(ctx, rl.guard, func() *redis.DurationCmd {
		return rl.conn.Store.PTTL(ctx, rl.Key())
	})
	var ttl time.Duration
	if err == nil {
		ttl, err = cmd.Result()
	}
	switch {
	case err != nil:
		return 0, rl.wrap(ctx, "ttl", err)
	case ttl == -2:
		return 0, nil
	case ttl == -1:
		return 0, rl.wrap(ctx, "ttl", ErrNoExpiry)
	}
	return ttl, nil
}

// wrap names the operation and key (see wrapStoreErr).
func (rl *RedisLock) wrap(ctx context.Context, op string, err error) error {
	return wrapStoreErr(ctx, &rl.conn, op, strconv.Quote(rl.Key()), err)
}
