package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock/internal/deadline"
	"github.com/zerolock/zerolock/redislock/internal/hub"
)

// recordPrefix starts every record a RedisLock stores in its key, and no
// token: tokens are base32 text.
const recordPrefix = "\x00zerolock-record:"

// errInvalidRetain is returned by RecordCtx for a retention under 1 ms.
var errInvalidRetain = errors.New("redislock: retain must be at least 1ms")

// A recordingLock is the lock a NewBackend backend makes: a RedisLock that
// is also a zerolock.Recorder, for the replay mode of the middleware and
// the interceptor (internal/guard finds it by that interface). The replay
// primitives live here, not on RedisLock, because only that core calls
// them: they stay out of the user's index. The wrapper holds one pointer,
// so it goes into a zerolock.Locker without an allocation.
type recordingLock struct{ *RedisLock }

var _ zerolock.RecordWaiter = recordingLock{}

// AcquireOrReadCtx is AcquireCtx that also reads a record RecordCtx stored
// in the key: it returns the record, acquiring nothing, when there is one.
// It runs a script (acquireread.lua) every time, where AcquireCtx mostly
// sends SET NX: the two answers must come from one look at the key. With
// WithReplicaAcks it waits for the replicas as AcquireCtx does, and
// releases and returns ErrNotReplicated when too few acknowledged. It
// mints no fencing token. It returns the errors AcquireCtx does.
//
// It is observed as AcquireCtx is, a record read counting as busy: the key
// is not this instance's.
func (l recordingLock) AcquireOrReadCtx(ctx context.Context) (bool, []byte, error) {
	ctx, a := l.obs.StartAcquire(ctx, false)
	ok, record, _, err := l.acquireOrRead(ctx, false)
	a.End(tryOutcome(ok, err), 0, err)
	return ok, record, err
}

// AcquireOrReadWaitCtx is AcquireOrReadCtx that, while another instance
// holds the key, waits up to wait for the hold to end: it returns the
// record stored in the hold's place, or takes the lock when the hold was
// released or expired. A waiter does not poll: it waits as AcquireWaitCtx
// does, marking the hold in the script that saw it held, and the holder's
// release or record of a marked hold announces itself (the
// holder's lock must not be WithoutWakeups: a backend's locks made with
// zerolock.LockerOptions.Waited never are). It returns false, a nil record
// and a nil error when wait passed first, also when the limit cut a try
// already sent (with WithDeadlineGuard): that try's hold, if it took one,
// is released first. Otherwise it returns the errors AcquireOrReadCtx
// returns.
func (l recordingLock) AcquireOrReadWaitCtx(ctx context.Context, wait time.Duration) (bool, []byte, error) {
	ctx, a := l.obs.StartAcquire(ctx, true)
	ok, record, err := l.acquireOrReadWait(ctx, wait)
	if record != nil {
		a.End(tryOutcome(false, nil), 0, nil) // a record read is busy, as in AcquireOrReadCtx
	} else {
		endWait(ctx, a, ok, err, 0)
	}
	return ok, record, err
}

// acquireOrReadWait is AcquireOrReadWaitCtx unobserved.
func (rl *RedisLock) acquireOrReadWait(ctx context.Context, wait time.Duration) (bool, []byte, error) {
	ok, record, _, err := rl.acquireOrRead(ctx, false)
	if ok || record != nil || err != nil {
		return ok, record, err
	}
	w := waitLoop{conn: &rl.conn, key: rl.Key(), channel: rl.releaseChannel(), backoff: rl.more.waitOpts, wrap: rl.wrap}
	ok, err = w.run(ctx, wait, func(ctx context.Context) (bool, time.Duration, error) {
		ok, rec, holderTTL, err := rl.acquireOrRead(ctx, true)
		if rec != nil {
			record = rec
			return true, 0, nil // ends the wait: the record is the answer
		}
		return ok, holderTTL, err
	})
	if record != nil {
		return false, record, nil
	}
	if errors.Is(err, ErrWaitCutTry) && ctx.Err() == nil {
		// The wait limit cut a try that was sent: it may have taken the
		// key, which a duplicate must not keep (nor run under). Give it
		// back, on a context the limit does not end, and report the wait
		// as passed: the caller refuses the duplicate as without Wait.
		px, _ := rl.px()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), max(px, time.Second))
		defer cancel()
		_, _ = rl.release(rctx)
		return false, nil, nil
	}
	return ok, nil, err
}

// acquireOrRead is AcquireOrReadCtx unobserved, that also returns the
// holder's remaining time when another instance holds the key; waiting
// marks the hold then (see acquireread.lua).
func (rl *RedisLock) acquireOrRead(ctx context.Context, waiting bool) (bool, []byte, time.Duration, error) {
	px, err := rl.px()
	if err != nil {
		return false, nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return false, nil, 0, rl.wrap(ctx, "acquire", err)
	}
	keys, args := rl.lockKeys(), []any{rl.tokenArg(), px.Milliseconds(), recordPrefix}
	if waiting {
		keys, args = []string{rl.Key(), waiterFlag(rl.Key())}, append(args, rl.more.flagPX)
		if rl.markWins() {
			args = append(args, "1")
		}
	}
	sent := monoNow()
	_, seen := rl.state.beginAcquire()
	var (
		cmd   *redis.Cmd
		short error // WithReplicaAcks: too few replicas acknowledged
	)
	if rl.more.acks > 0 {
		cmd, short, err = rl.replicated(ctx, func(p redis.Pipeliner) *redis.Cmd {
			return p.Eval(ctx, acquireReadSource, keys, args...)
		})
	} else {
		cmd, err = deadline.Within(ctx, rl.guard, func() *redis.Cmd {
			return rl.conn.Run(ctx, acquireReadScript, keys, args...)
		})
	}
	var reply any
	if err == nil {
		reply, err = cmd.Result()
	}
	ok := err == nil && reply == "OK"
	if ok && short != nil {
		// Held, but a failover could lose the hold: as acquireReplicated.
		rl.state.endAcquire(seen, true)
		_, _ = rl.release(context.WithoutCancel(ctx))
		return false, nil, 0, short
	}
	rl.state.endAcquire(seen, ok || err != nil)
	if err != nil {
		return false, nil, 0, rl.wrap(ctx, "acquire", err)
	}
	switch reply := reply.(type) {
	case string:
		if ok {
			rl.noteAcquired(sent, px)
			return true, nil, 0, nil
		}
	case int64:
		rl.noteRefused()
		return false, nil, time.Duration(max(reply, 0)) * time.Millisecond, nil
	case []any:
		if len(reply) == 1 {
			if v, isText := reply[0].(string); isText && len(v) >= len(recordPrefix) {
				rl.noteRefused()
				return false, []byte(v[len(recordPrefix):]), 0, nil
			}
		}
	}
	return false, nil, 0, rl.wrap(ctx, "acquire", fmt.Errorf("%w: %v", ErrUnexpectedReply, reply))
}

// RecordCtx replaces the lock's hold by record, which the key then keeps
// for retain, atomically and only while this instance holds the lock
// (record.lua): a holder that lost its lock stores nothing and gets false
// with a nil error. A running Watch ends first, with zerolock.ErrReleased.
// With WithReplicaAcks it waits for the replicas and returns false with
// ErrNotReplicated when too few acknowledged: the record is on the master
// only, and a failover could lose it. It returns errInvalidRetain for a
// retention under 1 ms, and a wrapped store error when Redis cannot answer,
// after which the record may or may not be stored.
//
// A record that replaces the hold ends it as ReleaseCtx does for the
// metrics: its hold time is observed, or a hold found gone.
func (l recordingLock) RecordCtx(ctx context.Context, record []byte, retain time.Duration) (bool, error) {
	began := l.holdBegan()
	ok, err := l.record(ctx, record, retain)
	if err == nil {
		observeRelease(l.obs, began, ok)
	}
	return ok, err
}

// record is RecordCtx unobserved.
func (rl *RedisLock) record(ctx context.Context, record []byte, retain time.Duration) (bool, error) {
	rl.stopWatchdog(ctx, zerolock.ErrReleased)
	ms := (retain + time.Millisecond - 1) / time.Millisecond
	if ms < 1 {
		return false, errInvalidRetain
	}
	if err := ctx.Err(); err != nil {
		return false, rl.wrap(ctx, "record", err)
	}
	value := make([]byte, 0, len(recordPrefix)+len(record))
	value = append(append(value, recordPrefix...), record...)
	keys, args := rl.lockKeys(), []any{rl.tokenArg(), value, int64(ms)}
	if !rl.quiet {
		// Releases announce themselves to waiters, and so does a record, to
		// all of them at once.
		args = append(args, rl.releaseChannel(), hub.WakeAllPayload)
	}
	seen := rl.state.beginRelease()
	var (
		cmd   *redis.Cmd
		err   error
		short error
	)
	if rl.more.acks > 0 {
		cmd, short, err = rl.replicated(ctx, func(p redis.Pipeliner) *redis.Cmd {
			return p.Eval(ctx, recordSource, keys, args...)
		})
	} else {
		cmd, err = deadline.Within(ctx, rl.guard, func() *redis.Cmd {
			return rl.conn.Run(ctx, recordScript, keys, args...)
		})
	}
	var reply any
	if err == nil {
		reply, err = cmd.Result()
	}
	if err != nil {
		return false, rl.wrap(ctx, "record", err)
	}
	if n, _ := reply.(int64); n == 1 && short != nil {
		// Stored on the master only: a failover could lose it, and a retry
		// would then run again. Said, so the caller can log it.
		return false, rl.wrap(ctx, "record", short)
	}
	if rl.state.endRelease(seen) {
		rl.forget()
	}
	n, ok := reply.(int64)
	if !ok {
		return false, rl.wrap(ctx, "record", fmt.Errorf("%w: %v", ErrUnexpectedReply, reply))
	}
	return n == 1, nil
}

// replicated sends the script that build makes and WAIT in one pipeline
// on the key's master, so WAIT counts the replicas that have the script's
// write (WAIT covers its own connection's writes only). short is
// ErrNotReplicated, wrapped, when fewer than WithReplicaAcks' replicas
// acknowledged in time.
func (rl *RedisLock) replicated(ctx context.Context, build func(redis.Pipeliner) *redis.Cmd) (cmd *redis.Cmd, short, err error) {
	pipe, err := rl.connFor(ctx)
	if err != nil {
		return nil, nil, err
	}
	var wait *redis.Cmd
	_, err = pipe.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = build(p)
		wait = p.Do(ctx, "wait", rl.more.acks, rl.more.acksTimeout.Milliseconds())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, nil, err
	}
	if got, _ := wait.Int64(); got < int64(rl.more.acks) {
		short = fmt.Errorf("%w: %d of %d within %v", ErrNotReplicated, got, rl.more.acks, rl.more.acksTimeout)
	}
	return cmd, short, nil
}
