package redislock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/script"
)

// setGetSupport remembers whether a store's server refused SET NX GET
// (Redis before 7.0), so that the locks sharing it stop asking. A Backend
// shares one among the locks it makes; a lock from New has its own.
type setGetSupport struct {
	refused atomic.Bool
}

// sharedSetGet makes locks share one memory of the store's support.
func sharedSetGet(s *setGetSupport) Option {
	return func(o *options) {
		o.setGet = s
	}
}

// setNXGet is the fast acquire on a store that resends commands after a
// lost reply and cannot be told not to (on go-zero's, after a refusal: see
// setNXPlain): SET key token NX PX px GET. A resend finds the key holding
// our own token and says so (mine), where SET NX would answer "not set"
// for a lock we hold. refused reports a server that does not accept NX
// with GET; the caller runs the script. Its success reply is nil, which
// go-redis checks with allocating error matching; setNXOnce avoids that
// where it can, and go-zero's store sends it in a script that answers 1
// instead (setnxget.lua).
func (rl *RedisLock) setNXGet(ctx context.Context, px time.Duration) (ok, mine, refused bool, err error) {
	var held string
	if rl.conn.IsGoZero() {
		var reply any
		reply, err = rl.conn.GoZero.EvalScript(ctx, setNXGetScript, rl.lockKeys(), rl.acquireCmds(px).argv)
		if err == nil {
			switch reply := reply.(type) {
			case int64: // 1: the key was free
				return true, false, false, nil
			case string:
				held = reply
				rl.conn.GoZero.NoteRefused(rl.Key())
			default:
				return false, false, false, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
			}
		}
	} else {
		held, err = rl.conn.Store.SetArgs(ctx, rl.Key(), rl.tokenArg(), redis.SetArgs{Mode: "NX", TTL: px, Get: true}).Result()
		if errors.Is(err, redis.Nil) {
			return true, false, false, nil
		}
	}
	if err != nil {
		if isSyntaxError(err) {
			rl.setGet.refused.Store(true)
			if rl.conn.IsGoZero() {
				rl.conn.GoZero.NoteNoSetGet()
			}
			return false, false, true, nil
		}
		return false, false, false, err
	}
	return false, isOwnHold(held, rl.token()), false, nil
}

// setNXPlain is the fast acquire on go-zero's store while this instance's
// tries are not being refused: SET key token PX px NX. Its success reply
// is a status, which go-redis reads without the allocating error checks it
// runs on a nil, and it is the cheapest acquire for the server (EVAL of
// setnxget.lua costs it about 1.8 µs more per acquire: it hashes the
// script's code on every call). Its refusal, nil, cannot tell another's
// hold from our own (go-zero's client resends a command after a lost
// reply), so it reports refused and the caller runs the acquire script,
// which can, and the instance's next tries send setnxget.lua, which
// answers with the holder in one round trip, until one of its acquires
// succeeds: under contention the first refusal after a success costs two
// round trips and later ones one, as before; without it an acquire costs
// the server one SET. A refusal also steers the store's new locks of the
// key to setnxget.lua for a second (gozero.Store.RecentlyRefused): a lock
// made per request, as the middleware's, would otherwise pay two round
// trips for every refusal.
func (rl *RedisLock) setNXPlain(ctx context.Context, px time.Duration, seen uint64) (ok, refused bool, err error) {
	reply, err := rl.conn.Do(ctx, rl.setNXArgs(px, seen))
	switch {
	case err == nil:
		if reply != "OK" {
			return false, false, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
		}
		return true, false, nil
	case errors.Is(err, redis.Nil):
		rl.refusedLast.Store(true)
		rl.conn.GoZero.NoteRefused(rl.Key())
		return false, true, nil
	default:
		return false, false, err
	}
}

// setNXArgs is SET key token PX px NX for an acquire that began when the
// lock had seen gains successful acquires: built for a lock's first, which
// for a lock made per request (the middleware's) is its only one, and
// from the second on built once (acquireCmds), which costs more than the
// command alone.
func (rl *RedisLock) setNXArgs(px time.Duration, gains uint64) []any {
	if gains == 0 {
		if a := rl.acqCmds.Load(); a == nil || a.px != px {
			return []any{"set", rl.keyArg(), rl.tokenArg(), "px", boxedMillis(px), "nx"}
		}
	}
	return rl.acquireCmds(px).setNX
}

// isSyntaxError reports the reply of a server older than Redis 7.0 to SET
// with both NX and GET, sent as a command or from a script.
func isSyntaxError(err error) bool {
	var reply redis.Error
	return errors.As(err, &reply) && strings.Contains(err.Error(), "ERR syntax error")
}

// setNXOnce is the fast acquire on a go-redis client: SET key token NX PX,
// sent once. Its success reply is a status, not a nil, which go-redis
// handles without the allocating error checks it runs on nil replies.
func (rl *RedisLock) setNXOnce(ctx context.Context, px time.Duration) (bool, error) {
	cmd := redis.NewBoolCmd(ctx, "set", rl.keyArg(), rl.tokenArg(), "px", boxedMillis(px), "nx")
	if err := rl.conn.Proc.Process(ctx, conn.OnceBoolCmd{BoolCmd: cmd}); err != nil {
		return false, err
	}
	return cmd.Val(), nil
}

// acquireCmds are a lock's acquire commands for one expiry, every argument
// boxed once: go-zero's store sends setNX as it is, and every store runs
// the scripts (s, and setnxget.lua on go-zero's) with argv. They are built
// by the first acquire that needs a script, or by the second SET NX on
// go-zero's store (see setNXArgs), and again when the expiry changes, not
// on every acquire, where boxing the arguments cost five allocations; and
// shared by concurrent acquires, which only read them.
type acquireCmds struct {
	px    time.Duration
	setNX []any // SET key token PX px NX
	s     *script.Script
	keys  []string
	argv  []any // the scripts' token and px in ms
}

// acquireCmds returns the lock's acquire commands for an expiry of px.
func (rl *RedisLock) acquireCmds(px time.Duration) *acquireCmds {
	if a := rl.acqCmds.Load(); a != nil && a.px == px {
		return a
	}
	ms := any(px.Milliseconds())
	a := &acquireCmds{px: px, s: acquireScript, keys: rl.lockKeys()}
	if rl.fencing {
		a.s, a.keys = fenceScript, rl.more.fenceKeys
	}
	a.setNX = []any{"set", rl.keyArg(), rl.tokenArg(), "px", ms, "nx"}
	a.argv = []any{rl.tokenArg(), ms}
	rl.acqCmds.Store(a)
	return a
}

// evalAcquire runs the acquire script of a try that is not waiting.
func (rl *RedisLock) evalAcquire(ctx context.Context, px time.Duration) (any, error) {
	a := rl.acquireCmds(px)
	return rl.conn.Eval(ctx, a.s, a.keys, a.argv...)
}

// boxedMillis returns px in whole milliseconds, boxed: from pxBoxes when an
// earlier lock boxed it (locks made per request mostly share an expiry),
// where boxing it on every first SET NX cost an allocation.
func boxedMillis(px time.Duration) any {
	ms := px.Milliseconds()
	slot := &pxBoxes[uint64(ms)*0x9E3779B97F4A7C15>>60]
	if b := slot.Load(); b != nil && b.ms == ms {
		return b.arg
	}
	b := &pxBox{ms: ms, arg: ms}
	slot.Store(b)
	return b.arg
}

// pxBox is an expiry in milliseconds and the same boxed; nothing writes one
// once stored.
type pxBox struct {
	ms  int64
	arg any
}

// pxBoxes holds the expiries boxed last, 16 places chosen by a hash of
// the milliseconds.
var pxBoxes [16]atomic.Pointer[pxBox]
