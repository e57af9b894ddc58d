package redislock

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/observe/lockobs"
)

// A keeper is the watchdog bookkeeping of one hold: when the latest
// successful acquire (or renewal) was sent, when the hold began, by when
// Redis has certainly expired it, and the running watchdog. Every
// primitive of the package embeds one and tells it how to renew.
type keeper struct {
	mu         sync.Mutex
	acquiredAt monoTime // when the latest successful acquire was sent
	heldSince  monoTime // when the hold began, for its hold time; zero when not held
	// goneBy is when the hold is gone unless renewed meanwhile: the latest
	// answer to a successful acquire, refresh or renewal plus the expiry
	// it set (Redis counts it from the moment it ran the command, which is
	// no later). Zero once the watchdog found the hold lost.
	goneBy monoTime
	// dog is the running watchdog, set and cleared under mu; a release
	// loads it without mu to see that none runs (most holds are not
	// watched).
	dog atomic.Pointer[watchdog]
}

// renewFunc renews a hold for px once: renewed (1), gone (-1: the key or
// share no longer exists), takenOver (0: another holder has it, or a value
// of another type), or an error. Callers that only ask whether the hold
// lasts compare with renewed.
type renewFunc func(ctx context.Context, px time.Duration) (int64, error)

// The replies of the renew scripts.
const (
	renewed   = 1
	takenOver = 0
	gone      = -1
)

// watchdog renews one held lock until stopped.
type watchdog struct {
	k      *keeper // the hold's, told of renewals and of the loss
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	obs    lockobs.Watch
	over   atomic.Bool // a loss or a stop has ended it: one loss is recorded at most

	// renewing is set while a renewal is in flight. The renewal's answer
	// or the end of the hold's validity, whichever takes it first, decides
	// whether it counts as a failure, so it counts once, before the
	// watched context is cancelled.
	renewMu  sync.Mutex
	renewing bool
}

// errRenewLate is the renew failure of a renewal still unanswered when the
// hold's validity ended.
var errRenewLate = fmt.Errorf("redislock: the renewal was unanswered when the hold's validity ended: %w",
	context.DeadlineExceeded)

// noteAcquired records that an acquire (or refresh) sent at sent, setting
// an expiry of px, succeeded: the watchdog counts the hold's validity from
// sent, and the hold time from the first acquire of the hold. An acquire
// sent after the previous hold was gone (it expired without a release, or
// the watchdog found it lost) took the lock afresh, not re-entrantly, so
// a new hold begins with it. The hold's start serves metrics alone (the
// hold time, and release_gone for a release that found it gone): a hold
// that begins while lock metrics are off (lockobs.MetricsEnabled) is
// untimed to its end, whatever the switch does meanwhile, and counts in
// neither; its acquires read the clock once, taking the expiry from when
// they were sent, which errs early by a round trip.
func (k *keeper) noteAcquired(sent monoTime, px time.Duration) {
	metered := lockobs.MetricsEnabled()
	goneBy := sent.add(px)
	if metered {
		goneBy = monoNow().add(px)
	}
	k.mu.Lock()
	if sent.after(k.acquiredAt) {
		k.acquiredAt = sent
	}
	if k.heldSince.isZero() || sent.after(k.goneBy) {
		k.heldSince = sent
		if !metered {
			k.heldSince = untimedHold
		}
	}
	if goneBy.after(k.goneBy) {
		k.goneBy = goneBy
	}
	k.mu.Unlock()
}

// noteRenewed records a renewal answered now that set an expiry of px.
func (k *keeper) noteRenewed(px time.Duration) {
	goneBy := monoNow().add(px)
	k.mu.Lock()
	if goneBy.after(k.goneBy) {
		k.goneBy = goneBy
	}
	k.mu.Unlock()
}

// noteLost records that the watchdog found the hold lost: the next
// acquire that succeeds begins a new hold. The hold's start stays, for the
// release that will find it gone.
func (k *keeper) noteLost() {
	k.mu.Lock()
	k.goneBy = 0
	k.mu.Unlock()
}

// noteRefused records a refused acquire: whatever this instance held
// before is another's now, so the next hold's time starts afresh.
func (k *keeper) noteRefused() {
	k.mu.Lock()
	k.heldSince = 0
	k.mu.Unlock()
}

// forget records that the hold ended: a later Watch needs a new acquire.
func (k *keeper) forget() {
	k.mu.Lock()
	k.acquiredAt = 0
	k.heldSince = 0
	k.goneBy = 0
	k.mu.Unlock()
}

// holdBegan returns when the hold began, zero when this instance knows of
// no hold, the hold is untimed, or lock metrics are off (nothing would
// record its time).
func (k *keeper) holdBegan() monoTime {
	if !lockobs.MetricsEnabled() {
		return 0
	}
	k.mu.Lock()
	began := k.heldSince
	k.mu.Unlock()
	if began == untimedHold {
		return 0
	}
	return began
}

// observeRelease records a release that Redis answered: on in, the hold
// time when it freed the hold (freed), or a release that found the hold
// already gone when this instance believed it held one since began.
func observeRelease(in *lockobs.Instruments, began monoTime, freed bool) {
	switch {
	case began.isZero():
	case freed:
		in.Held(began.since())
	default:
		in.ReleasedGone()
	}
}

// Watch keeps the held lock alive while work runs, renewing it with the same
// token through a compare-and-pexpire (a key that vanished is never
// re-created), and returns a context derived from ctx for that work.
//
// The context is cancelled, with context.Cause telling why, when:
//   - the lock is lost: the key is gone or holds another token
//     (zerolock.ErrLockLost);
//   - renewals have failed for long enough that the lock may have expired,
//     decided on the monotonic clock from when the last successful acquire
//     or renewal was sent, less a tenth of the expiry as margin for drift
//     (zerolock.ErrRenewFailed), so before Redis could expire it, not after;
//   - zerolock.MaxHold has passed (zerolock.ErrMaxHold);
//   - Release is called (zerolock.ErrReleased);
//   - ctx ends (its own cause).
//
// In every case the renewing goroutine stops; Release waits for it. Call
// Watch after a successful acquire; watching again returns the context of
// the running watchdog.
func (rl *RedisLock) Watch(ctx context.Context, opts ...zerolock.WatchOption) context.Context {
	px, err := rl.px()
	return rl.watch(ctx, px, err, func(ctx context.Context, px time.Duration) (int64, error) {
		return rl.conn.Run(ctx, renewScript, rl.lockKeys(), rl.tokenArg(), px.Milliseconds()).Int64()
	}, opts, rl.obs)
}

// watch starts the watchdog of a hold of px (or refuses with err, the
// expiry's error), renewing with renew and reporting to in; see
// RedisLock.Watch.
func (k *keeper) watch(ctx context.Context, px time.Duration, err error, renew renewFunc,
	opts []zerolock.WatchOption, in *lockobs.Instruments) context.Context {
	k.mu.Lock()
	defer k.mu.Unlock()
	if dog := k.dog.Load(); dog != nil {
		select {
		case <-dog.done:
		default:
			return dog.ctx
		}
	}
	if err == nil && k.acquiredAt.isZero() {
		err = fmt.Errorf("%w: Watch of a lock that is not held", zerolock.ErrLockLost)
	}
	if err != nil {
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(err)
		return ctx
	}
	o := zerolock.ApplyWatchOptions(opts...)
	if o.RenewEvery <= 0 || o.RenewEvery >= px-px/10 {
		o.RenewEvery = px / 3 // a renewal must come well before the validity ends
	}
	lockCtx, cancel := context.WithCancelCause(ctx)
	dog := &watchdog{k: k, ctx: lockCtx, cancel: cancel, done: make(chan struct{}), obs: in.StartWatch(ctx)}
	k.dog.Store(dog)
	go dog.run(renew, o, k.acquiredAt.time(), px)
	return lockCtx
}

// stopWatchdog cancels the running watchdog with cause and waits for its
// goroutine to end, but no longer than ctx allows: a renewal stuck on a
// hung server ends by itself within the client's read timeout.
func (k *keeper) stopWatchdog(ctx context.Context, cause error) {
	if k.dog.Load() == nil {
		return // none runs, or a Watch that starts now runs after this release
	}
	k.mu.Lock()
	dog := k.dog.Swap(nil)
	k.mu.Unlock()
	if dog != nil {
		dog.over.Store(true)
		dog.cancel(cause)
		select {
		case <-dog.done:
		case <-ctx.Done():
		}
	}
}

func (dog *watchdog) run(renew renewFunc, o zerolock.WatchSettings, acquired time.Time, px time.Duration) {
	defer close(dog.done)
	margin := px / 10
	validUntil := acquired.Add(px - margin)
	// The expiry signal has its own timer, so it fires on time even while a
	// renewal is stuck on a hung server (go-redis reads past a context's
	// deadline unless ContextTimeoutEnabled is set).
	expiry := time.AfterFunc(time.Until(validUntil), dog.expire)
	defer expiry.Stop()
	var maxHold <-chan time.Time
	if o.MaxHold > 0 {
		t := time.NewTimer(o.MaxHold)
		defer t.Stop()
		maxHold = t.C
	}
	// The first renewal is at once: it tells a lock lost before Watch
	// without waiting a third of the expiry.
	next := time.NewTimer(0)
	defer next.Stop()

	for {
		select {
		case <-dog.ctx.Done():
			return
		case <-maxHold:
			dog.lose(zerolock.ErrMaxHold, lockobs.MaxHold)
			return
		case <-next.C:
		}
		sent := time.Now()
		// A renewal may take at most until the lock's validity ends.
		ctx, cancel := context.WithDeadline(dog.ctx, validUntil)
		dog.setRenewing(true)
		reply, err := renew(ctx, px)
		cancel()
		dog.answered(err)
		switch {
		case dog.ctx.Err() != nil:
			return
		case err != nil:
			// Try again next tick; the expiry timer guards the rest.
		case reply == gone:
			dog.lose(zerolock.ErrLockLost, lockobs.Deleted)
			return
		case reply != renewed:
			dog.lose(zerolock.ErrLockLost, lockobs.TakenOver)
			return
		default:
			dog.obs.Renewed()
			dog.k.noteRenewed(px)
			validUntil = sent.Add(px - margin)
			expiry.Reset(time.Until(validUntil))
		}
		next.Reset(o.RenewEvery)
	}
}

// setRenewing records whether a renewal is in flight.
func (dog *watchdog) setRenewing(on bool) {
	dog.renewMu.Lock()
	dog.renewing = on
	dog.renewMu.Unlock()
}

// answered records the answer to the renewal in flight: a failure, err,
// counts unless the end of the validity took the renewal first (expire
// counted it) or the watch had already ended.
func (dog *watchdog) answered(err error) {
	dog.renewMu.Lock()
	defer dog.renewMu.Unlock()
	if dog.renewing && err != nil && dog.ctx.Err() == nil {
		dog.obs.RenewFailed(err)
	}
	dog.renewing = false
}

// expire ends the watch when the hold's validity ended with no renewal
// answered in time (zerolock.ErrRenewFailed): a renewal still in flight
// counts as a failure, as etcdlock counts it, then the loss.
func (dog *watchdog) expire() {
	dog.renewMu.Lock()
	late := dog.renewing
	dog.renewing = false
	dog.renewMu.Unlock()
	dog.end(zerolock.ErrRenewFailed, func() {
		if late {
			dog.obs.RenewFailed(errRenewLate)
		}
		dog.obs.Lost(lockobs.RenewFailed)
	})
}

// lose ends the watch on the loss of the hold, why.
func (dog *watchdog) lose(cause error, why lockobs.Cause) {
	dog.end(cause, func() { dog.obs.Lost(why) })
}

// end records the loss with record, unless the watch had already ended (a
// stop, the parent's end, or another loss first), and cancels the watched
// context with cause. It records first: the work under the lock, and the
// span Watch was called under, are still running until the cancel tells
// them, so the event lands on a span that has not ended, and a test that
// sees the context end sees the count.
func (dog *watchdog) end(cause error, record func()) {
	if dog.over.CompareAndSwap(false, true) && dog.ctx.Err() == nil {
		dog.k.noteLost()
		record()
	}
	dog.cancel(cause)
}
