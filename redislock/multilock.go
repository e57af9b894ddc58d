package redislock

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"slices"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/observe/lockobs"
	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/deadline"
	"github.com/zerolock/zerolock/redislock/internal/hub"
	"github.com/zerolock/zerolock/redislock/internal/script"
	"github.com/zerolock/zerolock/redislock/internal/slot"
)

var (
	//go:embed multilock_acquire.lua
	multiAcquireSource string
	multiAcquireScript = script.New(multiAcquireSource)

	//go:embed multilock_release.lua
	multiReleaseSource string
	multiReleaseScript = script.New(multiReleaseSource)

	//go:embed multilock_renew.lua
	multiRenewSource string
	multiRenewScript = script.New(multiRenewSource)
)

// A MultiLock holds several Redis keys at once, all of them or none: an
// order that deducts the stock of several SKUs locks them together. It is
// safe for concurrent use: the instance runs one acquire try or release at
// a time, so one goroutine's try never gives back keys another has just
// taken. Acquiring again while holding refreshes the expiry of every key.
//
// Each key is held exactly as a RedisLock holds it (a string with the
// lock's token and an expiry; one token for all the keys), so a MultiLock
// and a RedisLock on a shared key exclude each other, and a release by
// either wakes the other's waiters.
//
// The guarantee: on a single Redis server, or on Redis Cluster when all
// the keys share a hash slot (a common hash tag: "{order:42}:sku-1"),
// every operation is one script over all the keys, atomic. On Cluster
// across slots the keys are taken slot by slot in a fixed order (by hash
// slot, then hash tag, then key),
// each slot's keys atomically, and a refusal gives back those already
// taken (compare-and-delete with the lock's token). Once AcquireCtx
// returns the lock is held entirely or, after false with a nil error, not
// at all; meanwhile other clients may briefly see some of the keys taken
// by a try that then gives them back, and when giving back cannot reach a
// node those keys stay taken until the lock's expiry (the acquire then
// returns the error). No MultiLock ever holds some keys while it waits for
// others, so waiting MultiLocks cannot deadlock, whatever their key sets.
// An error (Redis did not answer) gives back only the keys the try is
// known to have taken, never those the instance held before it: a failed
// refresh of a held lock leaves the hold alone, as RedisLock does.
//
// Keys may be empty strings, as RedisLock's key may. Fencing tokens are not
// minted for multi-locks (a MultiLock has no Fence method), nor do they
// wait for replicas: NewMultiLock refuses WithFencing, WithReplicaAcks and
// WithNodeTimeout (see Option).
type MultiLock struct {
	conn     conn.Conn // the store, probed once
	keys     []string  // in the order they are taken
	channels []string  // the release channel of each key
	token    string
	waitOpts waitOptions
	guard    deadline.Guard // WithDeadlineGuard
	groups   []keyGroup     // what one script may touch: all keys, or a slot's
	turn     turn           // one acquire try or release at a time
	obs      *lockobs.Instruments

	state holdState

	holdExpiry // the expiry WithExpiry sets, and the tolerance
	keeper     // the watchdog and when the hold began
}

// A keyGroup is a run of a MultiLock's keys that one script may touch.
type keyGroup struct {
	first       int      // the index of its first key in MultiLock.keys
	keys        []string // MultiLock.keys[first : first+len(keys)]
	releaseArgs []any    // {token, channel of each key}, or {token} WithoutWakeups
}

var (
	_ zerolock.Locker    = (*MultiLock)(nil)
	_ zerolock.Waiter    = (*MultiLock)(nil)
	_ zerolock.Watcher   = (*MultiLock)(nil)
	_ zerolock.Refresher = (*MultiLock)(nil)
)

// NewMultiLock returns a lock on all of keys in store. The options are
// RedisLock's (WithExpiry, WithTolerance, WithBackoff, WithoutWakeups,
// WithDeadlineGuard), with the exceptions MultiLock names. It does no I/O.
//
// It returns an error wrapping ErrInvalidKeys for an empty list, or when
// a key appears twice (naming the key), and one wrapping
// ErrOptionNotApplicable for an option the MultiLock refuses.
func NewMultiLock(store Store, keys []string, opts ...Option) (*MultiLock, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%w: no keys", ErrInvalidKeys)
	}
	seen := make(map[string]bool, len(keys))
	for _, k := range keys {
		if seen[k] {
			return nil, fmt.Errorf("%w: duplicate key %q", ErrInvalidKeys, k)
		}
		seen[k] = true
	}
	o := applyOptions(opts)
	if err := o.refuse(multiLockRefuses, "a MultiLock", "", keys); err != nil {
		return nil, err
	}
	m := &MultiLock{
		conn:     conn.Wrap(store),
		keys:     lockOrder(keys),
		token:    newToken(),
		waitOpts: o.wait,
		turn:     newTurn(),
		obs:      lockobs.For(backendRedis, kindMultiLock, o.name),
	}
	m.guard = m.conn.Guard(o.deadlineGuard)
	m.channels = make([]string, len(m.keys))
	for i, k := range m.keys {
		m.channels[i] = hub.Channel(k)
	}
	for first := 0; first < len(m.keys); {
		end := first + 1
		for end < len(m.keys) && m.sameScript(m.keys[first], m.keys[end]) {
			end++
		}
		g := keyGroup{first: first, keys: m.keys[first:end:end], releaseArgs: []any{m.token}}
		if !o.quietRelease {
			for _, ch := range m.channels[first:end] {
				g.releaseArgs = append(g.releaseArgs, ch)
			}
		}
		m.groups = append(m.groups, g)
		first = end
	}
	m.holdExpiry.init(&o)
	return m, nil
}

// lockOrder returns a copy of keys in the order a MultiLock takes them: by
// Cluster hash slot, then hash tag, then key. Every MultiLock takes shared
// keys in the same order, so two of them contend on the first key they
// share rather than each taking part of the other's set.
func lockOrder(keys []string) []string {
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, func(a, b string) int {
		return cmp.Or(cmp.Compare(slot.Of(a), slot.Of(b)), cmp.Compare(slot.HashTag(a), slot.HashTag(b)), cmp.Compare(a, b))
	})
	return sorted
}

// sameScript reports whether one script may touch keys a and b: always on
// a single server; on Cluster when they share a slot; on a Ring, which
// places keys by hash tag rather than slot, when they share a tag.
func (m *MultiLock) sameScript(a, b string) bool {
	switch {
	case !m.conn.Clustered():
		return true
	case m.conn.Ring():
		return slot.HashTag(a) == slot.HashTag(b)
	}
	return slot.Of(a) == slot.Of(b)
}

// AcquireCtx tries once to take all the keys. It reports true when this
// instance holds every key afterwards (taken, or already held and their
// expiry refreshed), and false with a nil error when another holder has
// one of them; then it holds none (keys it still held from an earlier
// acquire, the rest of a hold that expired in part, are given back).
//
// It returns ErrInvalidExpiry for a negative or empty expiry; an error
// wrapping ErrNotLockKey, naming the key, when a key holds something other
// than a lock (then it holds none, as after false); and a wrapped store
// error when Redis cannot answer. errors.Is(err, ctx.Err()) holds when the
// context ended, also while it waited for another call on the same
// instance to finish. After a store error the keys this call is known to
// have taken are given back when Redis answers, and those the instance
// held before are left held; the failed slot's keys, and keys a resent
// script took (the resend reports them as held before), may stay held
// until their expiry, so a later AcquireCtx or ReleaseCtx on the same
// instance settles it.
func (m *MultiLock) AcquireCtx(ctx context.Context) (bool, error) {
	ctx, a := m.obs.StartAcquire(ctx, false)
	ok, err := m.acquire(ctx)
	a.End(tryOutcome(ok, err), 0, err)
	return ok, err
}

// acquire is AcquireCtx unobserved.
func (m *MultiLock) acquire(ctx context.Context) (bool, error) {
	px, err := m.px()
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, m.wrap(ctx, "acquire", err)
	}
	r := m.try(ctx, px, false)
	if r.err != nil {
		return false, m.wrap(ctx, "acquire", r.err)
	}
	return r.ok, nil
}

// ReleaseCtx deletes every key that still holds this instance's token,
// stops the watchdog, and wakes the waiters of each key it frees (unless
// WithoutWakeups). It reports true when every key was still held, and
// false with a nil error when one or more were not (expired, or taken by
// another holder since): those are left alone. On go-zero's store it may
// also answer false when go-zero's client resent a release whose first
// reply was lost (on go-redis each release is sent once, and a lost reply
// is an error): the first send freed the keys. It waits for an acquire
// try running on the same instance to finish first.
//
// It returns an error wrapping ErrNotLockKey, naming the key, when a key
// holds something other than a lock (the keys holding the token are freed
// all the same), and a wrapped store error when Redis cannot answer, after
// trying every slot's keys; the keys it could not free end at their
// expiry. errors.Is(err, ctx.Err()) holds when the context ended. Callers
// that release on the way out of a request should pass a context that is
// not already cancelled, such as context.WithoutCancel(ctx).
func (m *MultiLock) ReleaseCtx(ctx context.Context) (bool, error) {
	began := m.holdBegan()
	ok, err := m.releaseAll(ctx)
	if err == nil {
		observeRelease(m.obs, began, ok)
	}
	return ok, err
}

// releaseAll is ReleaseCtx unobserved.
func (m *MultiLock) releaseAll(ctx context.Context) (bool, error) {
	m.stopWatchdog(ctx, zerolock.ErrReleased)
	if err := ctx.Err(); err != nil {
		return false, m.wrap(ctx, "release", err)
	}
	type result struct {
		freed int
		err   error
	}
	r, err := deadline.Within(ctx, m.guard, func() result {
		if err := m.turn.take(ctx); err != nil {
			return result{err: err}
		}
		defer m.turn.give()
		seen := m.state.beginRelease()
		freed, err := m.release(ctx, m.groups)
		if err == nil && m.state.endRelease(seen) {
			m.forget()
		}
		return result{freed, err}
	})
	if err == nil {
		err = r.err
	}
	if err != nil {
		return false, m.wrap(ctx, "release", err)
	}
	return r.freed == len(m.keys), nil
}

// RefreshCtx extends every key to the lock's expiry (plus the tolerance)
// only while this instance still holds all of them, and reports false with
// a nil error when one was lost (gone, holding another token, or replaced
// by a value of another type); it never re-creates a vanished key. On a
// server or a slot it is atomic; across Cluster slots each slot's keys are
// checked and extended together, and a slot found lost stops it (earlier
// slots' keys, still this instance's, keep their new expiry until
// ReleaseCtx).
//
// It returns ErrInvalidExpiry for a negative or empty expiry, and a
// wrapped store error when Redis cannot answer (errors.Is(err, ctx.Err())
// holds when the context ended).
func (m *MultiLock) RefreshCtx(ctx context.Context) (bool, error) {
	px, err := m.px()
	if err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, m.wrap(ctx, "refresh", err)
	}
	sent := monoNow()
	type result struct {
		n   int64
		err error
	}
	r, err := deadline.Within(ctx, m.guard, func() result {
		n, err := m.renew(ctx, px)
		return result{n, err}
	})
	if err == nil {
		err = r.err
	}
	if err != nil {
		return false, m.wrap(ctx, "refresh", err)
	}
	if r.n != 1 {
		return false, nil
	}
	m.noteAcquired(sent, px) // a Watch started later counts from here
	return true, nil
}

// renew extends every key, slot by slot: 1 when all were; when a slot's
// keys were not all held, -1 when the key found lost is gone and 0 when
// another holds it.
func (m *MultiLock) renew(ctx context.Context, px time.Duration) (int64, error) {
	for _, g := range m.groups {
		reply, err := m.conn.Run(ctx, multiRenewScript, g.keys, m.token, px.Milliseconds()).Result()
		if err != nil {
			return 0, err
		}
		n, ok := reply.(int64)
		if !ok {
			return 0, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
		}
		if n != renewed {
			return n, nil
		}
	}
	return renewed, nil
}

// Watch keeps all the keys alive while work runs, as RedisLock.Watch does
// for one: it renews them with the same token (compare-and-pexpire of all
// of them, never re-creating a vanished key) and returns a context derived
// from ctx, cancelled with zerolock.ErrLockLost when any key is lost (gone
// or holding another token), and with the other causes RedisLock.Watch
// names. Call it after a successful acquire.
func (m *MultiLock) Watch(ctx context.Context, opts ...zerolock.WatchOption) context.Context {
	px, err := m.px()
	return m.watch(ctx, px, err, m.renew, opts, m.obs)
}

// wrap names the operation and keys (see wrapStoreErr).
func (m *MultiLock) wrap(ctx context.Context, op string, err error) error {
	return wrapStoreErr(ctx, &m.conn, op, fmt.Sprintf("multi-lock %q", m.keys), err, ErrNotLockKey)
}
