package redislock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/observe/lockobs"
	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/deadline"
	"github.com/zerolock/zerolock/redislock/internal/hub"
	"github.com/zerolock/zerolock/redislock/internal/script"
)

var (
	//go:embed semaphore_acquire.lua
	semaphoreAcquireSource string
	semaphoreAcquireScript = script.New(semaphoreAcquireSource)

	//go:embed semaphore_release.lua
	semaphoreReleaseSource string
	semaphoreReleaseScript = script.New(semaphoreReleaseSource)

	//go:embed semaphore_renew.lua
	semaphoreRenewSource string
	semaphoreRenewScript = script.New(semaphoreRenewSource)

	//go:embed semaphore_state.lua
	semaphoreStateSource string
	semaphoreStateScript = script.New(semaphoreStateSource)
)

// A Semaphore is a counting semaphore on one Redis key: up to permits (as
// NewSemaphore was given) instances hold it at once, each with a permit of
// its own that expires on its own, so a crashed holder frees only its
// permit, after its expiry. Each instance has a random token and holds at
// most one permit; acquiring again while holding refreshes that permit's
// expiry. It is safe for concurrent use.
//
// The key is a sorted set of the holders' tokens scored by their permits'
// expiry on the Redis server's clock, and every operation is one script on
// that one key, so a Semaphore works on Redis Cluster. The key itself
// expires with its latest permit.
type Semaphore struct {
	conn     conn.Conn // the store, probed once
	key      string
	token    string
	permits  int
	waitOpts waitOptions
	guard    deadline.Guard // WithDeadlineGuard
	obs      *lockobs.Instruments

	keys        []string // {key}
	channel     string   // where releases are announced
	releaseArgs []any    // {token, channel}, or {token} WithoutWakeups

	state holdState

	holdExpiry // the expiry WithExpiry sets, and the tolerance
	keeper     // the watchdog and when the permit was taken
}

var (
	_ zerolock.Locker    = (*Semaphore)(nil)
	_ zerolock.Waiter    = (*Semaphore)(nil)
	_ zerolock.Watcher   = (*Semaphore)(nil)
	_ zerolock.TTLer     = (*Semaphore)(nil)
	_ zerolock.Refresher = (*Semaphore)(nil)
)

// NewSemaphore returns a semaphore of permits permits on key in store:
// go-zero users pass redislock.GoZeroStore(rds), go-redis users pass their
// client (a *redis.Client, *redis.ClusterClient or the Sentinel client of
// redis.NewFailoverClient). It does no I/O. It returns ErrInvalidPermits
// when permits is less than 1.
//
// The expiry of a permit is set WithExpiry, in milliseconds (rounded up),
// plus WithTolerance (500 ms by default) added to what Redis is sent.
// WithBackoff, WithoutWakeups and WithDeadlineGuard apply as they do to a
// RedisLock. WithFencing (its holders share the key, so no token orders
// them), WithReplicaAcks (a permit is not made to survive a failover) and
// WithNodeTimeout are refused with an error wrapping
// ErrOptionNotApplicable (see Option). The scripts read the server's clock (TIME), so the server must be
// Redis 5 or later.
//
// Every acquire compares the permits live at that moment with its own
// Semaphore's permits, so instances of one key should agree on the number.
// When they do not, or when a deployment changes it while the key is live:
// raising permits lets more holders in at once; lowering them evicts
// nobody: the holders keep their permits (and may refresh them, by
// acquiring again, RefreshCtx or Watch) until they release them or they
// expire, and new acquires are refused until fewer holders than the new
// number are left.
func NewSemaphore(store Store, key string, permits int, opts ...Option) (*Semaphore, error) {
	o := applyOptions(opts)
	return newSemaphore(conn.Wrap(store), key, permits, o)
}

// newSemaphore is NewSemaphore with its options applied.
func newSemaphore(c conn.Conn, key string, permits int, o options) (*Semaphore, error) {
	if permits < 1 {
		return nil, fmt.Errorf("%w: %d for %q", ErrInvalidPermits, permits, key)
	}
	if err := o.refuse(semaphoreRefuses, "a Semaphore", key, nil); err != nil {
		return nil, err
	}
	token := newToken()
	s := &Semaphore{
		conn:     c,
		key:      key,
		token:    token,
		permits:  permits,
		waitOpts: o.wait,
		guard:    c.Guard(o.deadlineGuard),
		keys:     []string{key},
		channel:  hub.Channel(key),
		obs:      lockobs.For(backendRedis, kindSemaphore, o.name),
	}
	s.releaseArgs = []any{token, s.channel}
	if o.quietRelease {
		s.releaseArgs = s.releaseArgs[:1:1] // no channel: see semaphore_release.lua
	}
	s.holdExpiry.init(&o)
	return s, nil
}

// AcquireCtx tries once to take a permit. It reports true when this
// instance holds a permit afterwards (taken, or already held and its
// expiry refreshed) and false, with a nil error, when all permits are
// held by others.
//
// It returns ErrInvalidExpiry for a negative or empty expiry,
// ErrNotSemaphore when the key holds another kind of value, and a wrapped
// store error when Redis cannot answer; errors.Is(err, ctx.Err()) holds
// when the context ended. After an error the permit may or may not be
// held; a later AcquireCtx or ReleaseCtx on the same instance settles it.
func (s *Semaphore) AcquireCtx(ctx context.Context) (bool, error) {
	ctx, a := s.obs.StartAcquire(ctx, false)
	ok, err := s.acquire(ctx)
	a.End(tryOutcome(ok, err), 0, err)
	return ok, err
}

// acquire is AcquireCtx unobserved: the first try of a waiting acquire.
func (s *Semaphore) acquire(ctx context.Context) (bool, error) {
	px, err := s.px()
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, s.wrap(ctx, "acquire", err)
	}
	ok, _, err := s.try(ctx, px)
	if err != nil {
		return false, s.wrap(ctx, "acquire", err)
	}
	return ok, nil
}

// try makes one acquire attempt. When refused it reports how long until
// the earliest permit expires, which a waiter sleeps no longer than.
func (s *Semaphore) try(ctx context.Context, px time.Duration) (bool, time.Duration, error) {
	sent := monoNow()
	_, seen := s.state.beginAcquire()
	cmd, err := deadline.Within(ctx, s.guard, func() *redis.Cmd {
		return s.conn.Run(ctx, semaphoreAcquireScript, s.keys, s.token, px.Milliseconds(), s.permits)
	})
	var reply any
	if err == nil {
		reply, err = cmd.Result()
	}
	var (
		ok      bool
		retryIn time.Duration
	)
	if err == nil {
		switch r := reply.(type) {
		case string:
			ok = r == "OK"
			if !ok {
				err = semaphoreReplyError(reply)
			}
		case int64:
			retryIn = time.Duration(r) * time.Millisecond
		default:
			err = semaphoreReplyError(reply)
		}
	}
	s.state.endAcquire(seen, ok || err != nil)
	switch {
	case ok:
		s.noteAcquired(sent, px)
	case err == nil:
		s.noteRefused()
	}
	return ok, retryIn, err
}

// ReleaseCtx frees this instance's permit, and only it, stops its
// watchdog, and wakes one waiter of each process waiting on the key
// (unless WithoutWakeups). It reports false, with a nil error, when this
// instance held no permit (never taken, expired, or released already). On
// go-zero's store it may also answer false when go-zero's client resent a
// release whose first reply was lost: true or false, the permit is not
// this instance's afterwards.
//
// It returns ErrNotSemaphore when the key holds another kind of value, and
// a wrapped store error when Redis cannot answer; errors.Is(err,
// ctx.Err()) holds when the context ended. Callers that release on the way
// out of a request should pass a context that is not already cancelled,
// such as context.WithoutCancel(ctx).
func (s *Semaphore) ReleaseCtx(ctx context.Context) (bool, error) {
	began := s.holdBegan()
	ok, err := s.release(ctx)
	if err == nil {
		observeRelease(s.obs, began, ok)
	}
	return ok, err
}

// release is ReleaseCtx unobserved.
func (s *Semaphore) release(ctx context.Context) (bool, error) {
	// The watchdog stops first, even when ctx has ended: a release that
	// cannot reach Redis must not leave it renewing.
	s.stopWatchdog(ctx, zerolock.ErrReleased)
	if err := ctx.Err(); err != nil {
		return false, s.wrap(ctx, "release", err)
	}
	seen := s.state.beginRelease()
	cmd, err := deadline.Within(ctx, s.guard, func() *redis.Cmd {
		return s.conn.RunOnce(ctx, semaphoreReleaseScript, s.keys, s.releaseArgs...)
	})
	var reply any
	if err == nil {
		reply, err = cmd.Result()
	}
	if err != nil {
		return false, s.wrap(ctx, "release", err)
	}
	if s.state.endRelease(seen) {
		s.forget()
	}
	n, ok := reply.(int64)
	if !ok {
		return false, s.wrap(ctx, "release", semaphoreReplyError(reply))
	}
	return n == 1, nil
}

// RefreshCtx extends this instance's permit to the semaphore's expiry
// (plus the tolerance) only while the permit is still live: a
// compare-and-extend, the one a Watch renews with. It reports false with a
// nil error when the permit was lost (expired, deleted, or never taken)
// and never re-creates one, even when a permit is free.
//
// It returns ErrInvalidExpiry for a negative or empty expiry,
// ErrNotSemaphore when the key holds another kind of value, and a wrapped
// store error when Redis cannot answer (errors.Is(err, ctx.Err()) holds
// when the context ended), after which the permit may or may not have been
// extended.
func (s *Semaphore) RefreshCtx(ctx context.Context) (bool, error) {
	px, err := s.px()
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, s.wrap(ctx, "refresh", err)
	}
	sent := monoNow()
	n, err := deadline.Within(ctx, s.guard, func() int64Reply {
		return s.renew(ctx, px)
	})
	if err == nil {
		err = n.err
	}
	if err != nil {
		return false, s.wrap(ctx, "refresh", err)
	}
	if n.n != 1 {
		return false, nil
	}
	// A Watch started later counts its validity from this refresh.
	s.noteAcquired(sent, px)
	return true, nil
}

// Watch keeps this instance's permit alive while work runs, renewing it
// with the compare-and-extend of RefreshCtx (a lost permit is never
// re-created), and returns a context derived from ctx for that work. Its
// context.Cause is zerolock.ErrLockLost when the permit was lost (expired
// or deleted), zerolock.ErrRenewFailed when renewals failed for so long
// that it may have expired, zerolock.ErrMaxHold, zerolock.ErrReleased after
// ReleaseCtx, or ctx's own cause; see RedisLock.Watch. Watch of a permit
// that is not held returns a context already cancelled with ErrLockLost.
func (s *Semaphore) Watch(ctx context.Context, opts ...zerolock.WatchOption) context.Context {
	px, err := s.px()
	return s.watch(ctx, px, err, func(ctx context.Context, px time.Duration) (int64, error) {
		r := s.renew(ctx, px)
		if errors.Is(r.err, ErrNotSemaphore) {
			return takenOver, nil // the key is no longer a semaphore: the permit is lost
		}
		return r.n, r.err
	}, opts, s.obs)
}

// int64Reply is the answer of a script that replies with an integer.
type int64Reply struct {
	n   int64
	err error
}

// renew runs the compare-and-extend once: 1 when extended, -1 when the
// permit is gone (expired or deleted).
func (s *Semaphore) renew(ctx context.Context, px time.Duration) int64Reply {
	reply, err := s.conn.Run(ctx, semaphoreRenewScript, s.keys, s.token, px.Milliseconds()).Result()
	if err != nil {
		return int64Reply{err: err}
	}
	if n, ok := reply.(int64); ok {
		return int64Reply{n: n}
	}
	return int64Reply{err: semaphoreReplyError(reply)}
}

// TTL reports how long until a permit is free: 0 when one is free now,
// else the time until the earliest live permit expires, as the Redis
// server's clock sees it. A permit released before then frees one sooner.
// It returns ErrNotSemaphore when the key holds another kind of value,
// and a wrapped store error when Redis cannot answer.
func (s *Semaphore) TTL(ctx context.Context) (time.Duration, error) {
	live, earliest, err := s.status(ctx, "ttl")
	if err != nil || live < s.permits {
		return 0, err
	}
	return earliest, nil
}

// holders reports how many permits are live now, whoever holds them. It
// returns ErrNotSemaphore when the key holds another kind of value, and a
// wrapped store error when Redis cannot answer.
func (s *Semaphore) holders(ctx context.Context) (int, error) {
	live, _, err := s.status(ctx, "holders")
	return live, err
}

// status reads the live permits and the time until the earliest expires.
func (s *Semaphore) status(ctx context.Context, op string) (int, time.Duration, error) {
	cmd, err := deadline.Within(ctx, s.guard, func() *redis.Cmd {
		return s.conn.Run(ctx, semaphoreStateScript, s.keys)
	})
	var reply any
	if err == nil {
		reply, err = cmd.Result()
	}
	if err != nil {
		return 0, 0, s.wrap(ctx, op, err)
	}
	if r, ok := reply.([]any); ok && len(r) == 2 {
		live, okLive := r[0].(int64)
		ms, okMS := r[1].(int64)
		if okLive && okMS {
			return int(live), time.Duration(ms) * time.Millisecond, nil
		}
	}
	return 0, 0, s.wrap(ctx, op, semaphoreReplyError(reply))
}

// semaphoreReplyError is the error of a reply that is not the script's
// answer: ErrNotSemaphore for the scripts' report of a key of another
// type, else ErrUnexpectedReply.
func semaphoreReplyError(reply any) error {
	if r, ok := reply.(string); ok {
		if kind, found := strings.CutPrefix(r, "WRONGTYPE "); found {
			return fmt.Errorf("%w (WRONGTYPE: it holds a %s)", ErrNotSemaphore, kind)
		}
	}
	return fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
}

// wrap names the operation and key (see wrapStoreErr).
func (s *Semaphore) wrap(ctx context.Context, op string, err error) error {
	return wrapStoreErr(ctx, &s.conn, "semaphore "+op, strconv.Quote(s.key), err, ErrNotSemaphore)
}
