package redislock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/observe/lockobs"
	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/deadline"
	"github.com/zerolock/zerolock/redislock/internal/hub"
	"github.com/zerolock/zerolock/redislock/internal/script"
	"github.com/zerolock/zerolock/redislock/internal/slot"
)

var (
	//go:embed rwlock_rlock.lua
	rwRLockSource string
	rwRLockScript = script.New(rwRLockSource)

	//go:embed rwlock_lock.lua
	rwLockSource string
	rwLockScript = script.New(rwLockSource)

	//go:embed rwlock_runlock.lua
	rwRUnlockSource string
	rwRUnlockScript = script.New(rwRUnlockSource)

	//go:embed rwlock_unlock.lua
	rwUnlockSource string
	rwUnlockScript = script.New(rwUnlockSource)

	//go:embed rwlock_renewread.lua
	rwRenewReadSource string
	rwRenewReadScript = script.New(rwRenewReadSource)

	//go:embed rwlock_abandon.lua
	rwAbandonSource string
	rwAbandonScript = script.New(rwAbandonSource)
)

// An RWLock is a read-write lock on one Redis key: many readers or one
// writer. Each instance has its own token and holds at most one side at a
// time; make one instance per holder. It is safe for concurrent use.
//
// The writer holds the key itself, as a RedisLock does (so a RedisLock on
// the same key excludes writers, and readers while it holds the key; but a
// RedisLock does not look at the readers' shares, so one taken while
// readers hold is a writer beside them: write through the RWLock's own
// write side, never a RedisLock, where readers may hold).
// Readers hold shares in a sorted set beside it, in the key's Cluster slot,
// each share expiring on its own on the server's clock: a crashed reader
// frees its share after its expiry, never the others'. Every operation is
// one Lua script (Redis 5 or later: the scripts read the server's clock).
//
// A writer that waits (LockWaitCtx) stops new readers from starving it:
// while it waits, RLockCtx refuses new readers (readers already holding
// may refresh their shares), and once the shares are gone the writer gets
// the key before further readers. A single LockCtx try never holds readers
// back. Waiters are woken on release: every waiter when a writer unlocks or
// a waiting writer gives up, and when the last reader unlocks.
//
// WithFencing, every write hold gets a fencing token from the counter a
// RedisLock WithFencing uses, and a reader gets the token of the latest
// writer before it (Fence). Without it nothing is minted or read: no
// counter key is written, and Fence returns 0.
type RWLock struct {
	conn     conn.Conn // the store, probed once
	key      string
	token    string
	waitOpts waitOptions
	guard    deadline.Guard
	obsRead  *lockobs.Instruments // the read side's
	obsWrite *lockobs.Instruments // the write side's

	// Arguments built once. Every script's first key is the lock key: a
	// go-redis Ring routes a script by its first key, and the companions
	// of some keys (see slot.Companion) carry a hash tag that a Ring places
	// on another shard than the key.
	keys       []string // {key, readers, intent}, and the fence counter WithFencing
	writerKeys []string // {key}
	readerKeys []string // {key, readers}
	intentKeys []string // {key, intent}
	// {token, channel, hub.WakeAllPayload}: a release's and an abandoned
	// intent's arguments; {token} WithoutWakeups.
	releaseArgs []any
	channel     string

	fence atomic.Int64

	mu   sync.Mutex
	side side // what this instance may hold, as Redis last answered

	holdExpiry // the expiry WithExpiry sets, and the tolerance
	keeper     // the watchdog of the side held
}

// side is which side of an RWLock an instance may hold.
type side uint8

const (
	sideNone side = iota
	sideRead
	sideWrite
)

// NewRWLock returns a read-write lock on key in any Store (GoZeroStore
// adapts go-zero's *redis.Redis). The options are RedisLock's: WithExpiry,
// WithTolerance, WithBackoff, WithoutWakeups and WithDeadlineGuard apply;
// WithFencing makes write holds mint fencing tokens and read holds read
// the latest one (give it to the readers and the writers of a key alike:
// it keeps one never-expiring counter key per lock key, so leave it out
// where nobody checks the tokens, for one RWLock per cache key, say).
// WithReplicaAcks and WithNodeTimeout are refused: every acquire and
// refresh of the lock returns an error wrapping ErrOptionNotApplicable
// (see Option).
func NewRWLock(store Store, key string, opts ...Option) *RWLock {
	o := applyOptions(opts)
	readers := slot.Companion(key, "zerolock.readers")
	intent := slot.Companion(key, "zerolock.writer-waiting")
	l := &RWLock{
		conn:       conn.Wrap(store),
		key:        key,
		token:      newToken(),
		waitOpts:   o.wait,
		keys:       []string{key, readers, intent},
		writerKeys: []string{key},
		readerKeys: []string{key, readers},
		intentKeys: []string{key, intent},
		channel:    hub.Channel(key),
		obsRead:    lockobs.For(backendRedis, kindRWLockRead, o.name),
		obsWrite:   lockobs.For(backendRedis, kindRWLockWrite, o.name),
	}
	l.guard = l.conn.Guard(o.deadlineGuard)
	if o.fencing {
		l.keys = append(l.keys, slot.Companion(key, "zerolock.fence"))
	}
	l.releaseArgs = []any{l.token, l.channel, hub.WakeAllPayload}
	if o.quietRelease {
		l.releaseArgs = l.releaseArgs[:1:1] // no channel: nothing announced
	}
	l.holdExpiry.init(&o)
	l.refused = o.refuse(rwLockRefuses, "an RWLock", key, nil)
	return l
}

// RLockCtx tries once to take a read share. It reports true when this
// instance holds a share afterwards (taken, or already held and its expiry
// refreshed), and false with a nil error when a writer holds the key or
// another writer waits for it.
//
// It returns ErrOtherSideHeld when this instance holds the write side,
// ErrInvalidExpiry for a negative or empty expiry, a wrapped ErrNotRWLock
// when the key or a companion holds a value of another type (nothing is
// taken), and a wrapped store error when Redis cannot answer
// (errors.Is(err, ctx.Err()) holds when the context ended), after which
// the share may or may not be held.
func (l *RWLock) RLockCtx(ctx context.Context) (bool, error) {
	ctx, a := l.obsRead.StartAcquire(ctx, false)
	ok, err := l.rlock(ctx)
	a.End(tryOutcome(ok, err), 0, err)
	return ok, err
}

// rlock is RLockCtx unobserved: the first try of a waiting one.
func (l *RWLock) rlock(ctx context.Context) (bool, error) {
	ok, _, err := l.tryOnce(ctx, "rlock", func(ctx context.Context, px time.Duration) (bool, time.Duration, error) {
		return l.tryRead(ctx, px, false)
	})
	return ok, err
}

// LockCtx tries once to take the write side. It reports true when this
// instance holds it afterwards (taken, with a new fencing token
// WithFencing, or already held and its expiry refreshed), and false with a
// nil error when
// another writer holds it or a reader's share is left. A refused LockCtx
// leaves nothing behind: it does not hold new readers back, as a waiting
// LockWaitCtx does.
//
// It returns ErrOtherSideHeld when this instance holds a read share,
// ErrInvalidExpiry for a negative or empty expiry, a wrapped ErrNotRWLock
// when the key or a companion holds a value of another type (nothing is
// taken), and a wrapped store error when Redis cannot answer
// (errors.Is(err, ctx.Err()) holds when the context ended), after which
// the write side may or may not be held.
func (l *RWLock) LockCtx(ctx context.Context) (bool, error) {
	ctx, a := l.obsWrite.StartAcquire(ctx, false)
	ok, err := l.lock(ctx)
	a.End(tryOutcome(ok, err), l.writeFence(ok), err)
	return ok, err
}

// lock is LockCtx unobserved: the first try of a waiting one.
func (l *RWLock) lock(ctx context.Context) (bool, error) {
	ok, _, err := l.tryOnce(ctx, "lock", func(ctx context.Context, px time.Duration) (bool, time.Duration, error) {
		return l.tryWrite(ctx, px, false)
	})
	return ok, err
}

// writeFence is the fencing token a write acquire that ended ok reports:
// the hold's, 0 when not acquired (or made without WithFencing).
func (l *RWLock) writeFence(ok bool) int64 {
	if !ok {
		return 0
	}
	return l.fence.Load()
}

// obsOf is the instruments of side s, nil for neither.
func (l *RWLock) obsOf(s side) *lockobs.Instruments {
	switch s {
	case sideRead:
		return l.obsRead
	case sideWrite:
		return l.obsWrite
	}
	return nil
}

// tryOnce checks the expiry and the context, then makes one attempt.
func (l *RWLock) tryOnce(ctx context.Context, op string,
	try func(context.Context, time.Duration) (bool, time.Duration, error)) (bool, time.Duration, error) {
	px, err := l.px()
	if err != nil {
		return false, 0, err
	}
	if err := ctx.Err(); err != nil {
		return false, 0, l.wrap(ctx, op, err)
	}
	ok, retryIn, err := try(ctx, px)
	if err != nil && !errors.Is(err, ErrOtherSideHeld) {
		err = l.wrap(ctx, op, err)
	}
	return ok, retryIn, err
}

// tryRead makes one read attempt: whether it won, the retry hint of a
// refusal, and ErrOtherSideHeld or a store error. A waiting reader refused
// by a writer marks a RedisLock's hold, or sets the key's waiter flag for
// any other writer (see waiters.go).
func (l *RWLock) tryRead(ctx context.Context, px time.Duration, waiting bool) (bool, time.Duration, error) {
	return l.acquire(ctx, sideRead, px, func() *redis.Cmd {
		if waiting {
			return l.conn.Run(ctx, rwRLockScript, l.waitingKeys(), l.token, px.Milliseconds(),
				waiterFlagTTL(l.waitOpts).Milliseconds())
		}
		return l.conn.Run(ctx, rwRLockScript, l.keys, l.token, px.Milliseconds())
	})
}

// tryWrite makes one write attempt; a waiting writer leaves its intent,
// for intentPX, when refused, and marks a RedisLock's hold (or sets the
// key's waiter flag) when a writer refused it.
func (l *RWLock) tryWrite(ctx context.Context, px time.Duration, waiting bool) (bool, time.Duration, error) {
	if !waiting {
		return l.acquire(ctx, sideWrite, px, func() *redis.Cmd {
			return l.conn.Run(ctx, rwLockScript, l.keys, l.token, px.Milliseconds(), "0", l.intentPX(px).Milliseconds())
		})
	}
	return l.acquire(ctx, sideWrite, px, func() *redis.Cmd {
		return l.conn.Run(ctx, rwLockScript, l.waitingKeys(), l.token, px.Milliseconds(), "1",
			l.intentPX(px).Milliseconds(), waiterFlagTTL(l.waitOpts).Milliseconds())
	})
}

// waitingKeys are the keys of a waiting try: the lock's, then the key's
// waiter flag.
func (l *RWLock) waitingKeys() []string {
	return append(l.keys[:len(l.keys):len(l.keys)], waiterFlag(l.key))
}

// intentPX is how long a waiting writer's intent lives unless its next try
// renews it: twice the longest back-off (the waiter tries again within
// half of it), at least a second, and no longer than the write hold it
// waits for. A waiting writer that crashed holds readers back no longer.
func (l *RWLock) intentPX(px time.Duration) time.Duration {
	return min(px, max(2*l.waitOpts.maxBackoff, time.Second))
}

// acquire sends one acquire script for side s, for an expiry of px, and
// records what its reply says this instance holds.
func (l *RWLock) acquire(ctx context.Context, s side, px time.Duration, send func() *redis.Cmd) (bool, time.Duration, error) {
	sent := monoNow()
	cmd, err := deadline.Within(ctx, l.guard, send)
	var reply any
	if err == nil {
		reply, err = cmd.Result()
	}
	if err != nil {
		l.setSide(s, outcomeUnknown)
		return false, 0, err
	}
	status, n, err := parsePair(reply)
	if err != nil {
		return false, 0, err // a type report: the script changed nothing
	}
	switch status {
	case 1:
		l.fence.Store(n)
		l.setSide(s, outcomeHeld)
		l.noteAcquired(sent, px)
		return true, 0, nil
	case -1:
		l.setSide(other(s), outcomeHeld)
		return false, 0, ErrOtherSideHeld
	}
	l.setSide(s, outcomeLost)
	return false, max(time.Duration(n)*time.Millisecond, 0), nil
}

// parsePair reads a script's {status, number} reply.
func parsePair(reply any) (int64, int64, error) {
	if r, ok := reply.([]any); ok && len(r) == 2 {
		status, okStatus := r[0].(int64)
		n, okN := r[1].(int64)
		if okStatus && okN && status >= -1 && status <= 1 {
			return status, n, nil
		}
	}
	return 0, 0, rwReplyError(reply)
}

// parseCount reads a release's or renewal's 0 or 1.
func parseCount(reply any) (int64, error) {
	if n, ok := reply.(int64); ok {
		return n, nil
	}
	return 0, rwReplyError(reply)
}

// rwReplyError is the error of a reply that is not the script's answer:
// ErrNotRWLock for the scripts' report of a key of another type ("WRONGTYPE
// <type> <key>"), else ErrUnexpectedReply.
func rwReplyError(reply any) error {
	if r, ok := reply.(string); ok {
		if report, found := strings.CutPrefix(r, "WRONGTYPE "); found {
			kind, key, _ := strings.Cut(report, " ")
			return fmt.Errorf("%w (WRONGTYPE: %q holds a %s)", ErrNotRWLock, key, kind)
		}
	}
	return fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
}

func other(s side) side {
	if s == sideRead {
		return sideWrite
	}
	return sideRead
}

// setSide records what Redis answered about side s: held, lost (a
// refusal, or a release Redis answered), or unknown (an error: s may be
// held, unless this instance holds the other side, which rules s out).
func (l *RWLock) setSide(s side, o outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case o == outcomeHeld:
		l.side = s
	case o == outcomeUnknown && l.side == sideNone:
		l.side = s
	case o == outcomeLost && l.side == s:
		l.side = sideNone
		l.forget()
	}
}

// outcome is what a call learned about a side.
type outcome uint8

const (
	outcomeHeld outcome = iota
	outcomeLost
	outcomeUnknown
)

// heldSide is the side this instance may hold.
func (l *RWLock) heldSide() side {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.side
}

// RUnlockCtx removes this instance's read share if it still holds one,
// stopping the watchdog of a watched read hold; the last share's removal
// wakes the waiters (unless WithoutWakeups). It reports false, with a nil
// error, when it held no share (never taken, expired, or this instance
// holds the write side); on go-zero's store also when go-zero's client
// resent an unlock whose first reply was lost (on go-redis it is sent
// once, and a lost reply is an error). It returns a wrapped ErrNotRWLock when the
// readers' set holds a value of another type, and a wrapped store error
// when Redis cannot answer (errors.Is(err, ctx.Err()) holds when the
// context ended); the share then ends at its expiry at the latest.
func (l *RWLock) RUnlockCtx(ctx context.Context) (bool, error) {
	return l.release(ctx, "runlock", sideRead, func() *redis.Cmd {
		return l.conn.RunOnce(ctx, rwRUnlockScript, l.readerKeys, l.releaseArgs...)
	})
}

// UnlockCtx deletes the key if this instance still holds the write side,
// stopping the watchdog of a watched write hold, and wakes every waiter
// (unless WithoutWakeups): readers share the lock, so all may proceed. It
// reports false, with a nil error, when it did not hold the write side,
// or, on go-zero's store, after a resend as RUnlockCtx says. It
// returns a wrapped ErrNotRWLock when the key holds a value of another
// type, and a wrapped store error when Redis cannot answer (errors.Is(err,
// ctx.Err()) holds when the context ended); the hold then ends at its
// expiry at the latest.
func (l *RWLock) UnlockCtx(ctx context.Context) (bool, error) {
	return l.release(ctx, "unlock", sideWrite, func() *redis.Cmd {
		return l.conn.RunOnce(ctx, rwUnlockScript, l.writerKeys, l.releaseArgs...)
	})
}

// release releases side s (releaseSide) and observes it: the hold time of
// a hold it ended, or a hold of s found gone.
func (l *RWLock) release(ctx context.Context, op string, s side, send func() *redis.Cmd) (bool, error) {
	var began monoTime
	if l.heldSide() == s {
		began = l.holdBegan()
	}
	ok, err := l.releaseSide(ctx, op, s, send)
	if err == nil {
		observeRelease(l.obsOf(s), began, ok)
	}
	return ok, err
}

// releaseSide stops the watchdog (before anything else, so a release that
// cannot reach Redis does not leave it renewing), unless this instance
// holds the other side, which the watchdog then renews, and sends the
// release script of side s.
func (l *RWLock) releaseSide(ctx context.Context, op string, s side, send func() *redis.Cmd) (bool, error) {
	if l.heldSide() != other(s) {
		l.stopWatchdog(ctx, zerolock.ErrReleased)
	}
	if err := ctx.Err(); err != nil {
		return false, l.wrap(ctx, op, err)
	}
	cmd, err := deadline.Within(ctx, l.guard, send)
	var reply any
	if err == nil {
		reply, err = cmd.Result()
	}
	if err != nil {
		return false, l.wrap(ctx, op, err)
	}
	n, err := parseCount(reply)
	if err == nil || errors.Is(err, ErrNotRWLock) {
		l.setSide(s, outcomeLost) // a key of another type holds no side either
	}
	if err != nil {
		return false, l.wrap(ctx, op, err)
	}
	return n == 1, nil
}

// RefreshCtx extends the side this instance holds (its read share or the
// write side) to the lock's expiry, only while it still holds it: a
// compare-and-extend that never re-creates a vanished hold, as a Watch
// renews. It reports false with a nil error when this instance holds
// neither side or its hold was lost. It returns ErrInvalidExpiry for a
// negative or empty expiry, a wrapped ErrNotRWLock when the readers' set
// of a read hold holds a value of another type, and a wrapped store error
// when Redis cannot answer (errors.Is(err, ctx.Err()) holds when the
// context ended).
func (l *RWLock) RefreshCtx(ctx context.Context) (bool, error) {
	px, err := l.px()
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, l.wrap(ctx, "refresh", err)
	}
	s := l.heldSide()
	if s == sideNone {
		return false, nil
	}
	sent := monoNow()
	r, err := deadline.Within(ctx, l.guard, func() renewResult {
		n, err := l.renew(s)(ctx, px)
		return renewResult{n, err}
	})
	if err == nil {
		err = r.err
	}
	if err != nil {
		return false, l.wrap(ctx, "refresh", err)
	}
	if r.n != 1 {
		l.setSide(s, outcomeLost)
		return false, nil
	}
	l.noteAcquired(sent, px)
	return true, nil
}

// renewResult is what one renewal returned.
type renewResult struct {
	n   int64
	err error
}

// renew returns the compare-and-extend of side s: renew.lua for the key,
// rwlock_renewread.lua for a share.
func (l *RWLock) renew(s side) renewFunc {
	if s == sideWrite {
		return func(ctx context.Context, px time.Duration) (int64, error) {
			return l.conn.Run(ctx, renewScript, l.writerKeys, l.token, px.Milliseconds()).Int64()
		}
	}
	return func(ctx context.Context, px time.Duration) (int64, error) {
		reply, err := l.conn.Run(ctx, rwRenewReadScript, l.readerKeys, l.token, px.Milliseconds()).Result()
		if err != nil {
			return 0, err
		}
		return parseCount(reply)
	}
}

// Watch keeps the side this instance holds alive while work runs, as
// RedisLock.Watch does for a lock: it renews the read share or the write
// side with compare-and-extend (a vanished hold is never re-created) and
// returns a context derived from ctx, cancelled with context.Cause
// zerolock.ErrLockLost when the hold is lost (the share or key is gone or
// another's), zerolock.ErrRenewFailed when renewals failed for so long that
// the hold may have expired, zerolock.ErrMaxHold after zerolock.MaxHold,
// zerolock.ErrReleased when the watched side is released, or ctx's own
// cause. Watch of an instance that holds neither side returns a context
// already cancelled with zerolock.ErrLockLost; watching again returns the
// running watchdog's context.
func (l *RWLock) Watch(ctx context.Context, opts ...zerolock.WatchOption) context.Context {
	px, err := l.px()
	s := l.heldSide()
	if err == nil && s == sideNone {
		err = fmt.Errorf("%w: Watch of an RWLock that holds neither side", zerolock.ErrLockLost)
	}
	return l.watch(ctx, px, err, l.renew(s), opts, l.obsOf(s))
}

// Fence returns the fencing token of this instance's latest hold, made
// WithFencing. For a write hold it is the writer's own token, greater than
// every token issued before for the key (by RWLocks and by RedisLocks
// WithFencing). For a read share it is the token of the latest writer
// before it, so a reader can check that the data it reads is at least that
// new. It is 0 before this instance's first hold, for a reader before any
// writer WithFencing, and always for an RWLock made without WithFencing.
func (l *RWLock) Fence() int64 {
	return l.fence.Load()
}

// wrap names the operation and key (see wrapStoreErr).
func (l *RWLock) wrap(ctx context.Context, op string, err error) error {
	return wrapStoreErr(ctx, &l.conn, op, strconv.Quote(l.key), err, ErrNotRWLock, ErrOtherSideHeld)
}
