package redislock

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock/internal/deadline"
	"github.com/zerolock/zerolock/redislock/internal/script"
)

var (
	//go:embed rate.lua
	rateSource string
	rateScript = script.New(rateSource)
)

// rateMembers names the admissions of this process in a rate log: a
// random prefix drawn once (80 bits, so two processes never share one),
// then a count. A name is unique to its request, which the script needs
// (two admissions in one microsecond are two entries), and the same when
// go-redis resends the request's command, which the script then admits
// without counting it twice.
var rateMembers = struct {
	prefix string
	n      atomic.Uint64
}{prefix: newToken()[:16]}

// nextRateMember returns a member no other request has.
func nextRateMember() string {
	return rateMembers.prefix + strconv.FormatUint(rateMembers.n.Add(1), 36)
}

// Rate counts one request of key against quota requests per period and
// admits it only if no period-long window then holds more than quota
// admissions, as zerolock.RateBackend says: a sliding log, one script on
// key alone (so it runs on node, Sentinel and Cluster stores, and on
// go-zero's), one round trip, on the Redis server's clock (TIME), never
// this process's, so instances whose clocks disagree count as one. The key
// is a sorted set of the last period's admissions, O(quota) memory (about
// 30 bytes an admission up to 128, Redis's compact encoding, and 120 past
// it), that expires a period after its newest.
//
// The bound is exact, where the usual shortcuts are not: a fixed window
// (go-zero's PeriodLimit) admits up to 2×quota across a window boundary,
// and GCRA with a burst of quota (go-redis's redis_rate) up to 2×quota−1
// in a period; go-zero's TokenLimiter also takes "now" from the client's
// clock, so instances with skewed clocks disagree.
//
// The script reads the server's clock (TIME) before it writes, so the
// server must be Redis 3.2 or later (or Valkey): the script asks for
// effects replication. That clock is the server's wall clock, which can
// read earlier than it did: when it reads earlier than the key's newest
// admission by less than a period (a small step back, or readings that
// disagree by microseconds), a request admitted then is logged at that
// admission's time, so such readings never take the times logged back and
// the bound holds on them; RetryAfter and Reset still count from the clock
// as it reads. Should it step back by a period or more, admissions logged
// before the step count until a period after the time they were logged
// at: the bound holds on the time that passes, and for that long a
// RetryAfter may be longer than period.
//
// It returns ErrInvalidRate for quota < 1 or period < 1ms, ErrNotRateLog
// when the key holds another kind of value, and a wrapped store error
// when Redis cannot answer (errors.Is(err, ctx.Err()) holds when the
// context ended); the request may or may not have been counted then.
func (b storeBackend) Rate(ctx context.Context, key string, quota int, period time.Duration) (zerolock.RateResult, error) {
	r, _, err := b.rate(ctx, key, quota, period, nextRateMember())
	return r, err
}

// rate is Rate for the request named member in the log, that also reports
// the server's clock when it answered, in microseconds since the epoch, or
// the time the request was logged at when it was newly admitted at a later
// time (while the clock read earlier than the key's newest admission).
func (b storeBackend) rate(ctx context.Context, key string, quota int, period time.Duration,
	member string) (zerolock.RateResult, int64, error) {
	if quota < 1 || period < time.Millisecond {
		return zerolock.RateResult{}, 0, fmt.Errorf("%w: quota %d per %v for %q", ErrInvalidRate, quota, period, key)
	}
	if err := ctx.Err(); err != nil {
		return zerolock.RateResult{}, 0, b.wrapRate(ctx, key, err)
	}
	// A period that is not a whole number of microseconds is rounded up,
	// which only narrows what is admitted.
	us := (period + time.Microsecond - 1) / time.Microsecond
	keys := []string{key}
	reply, err := deadline.Within(ctx, b.rateGuard, func() anyReply {
		v, err := b.conn.Eval(ctx, rateScript, keys, quota, int64(us), member)
		return anyReply{v, err}
	})
	if err == nil {
		err = reply.err
	}
	if err != nil {
		return zerolock.RateResult{}, 0, b.wrapRate(ctx, key, err)
	}
	r, now, err := rateReply(reply.v)
	if err != nil {
		return zerolock.RateResult{}, 0, b.wrapRate(ctx, key, err)
	}
	return r, now, nil
}

// anyReply is a script's reply and error, carried through deadline.Within.
type anyReply struct {
	v   any
	err error
}

// rateReply reads the script's reply: {admitted, remaining, µs until a
// request would be admitted, µs until the log is empty, the server's now
// in µs or the later time a new admission was logged at}, or its report of
// a key of another type.
func rateReply(reply any) (zerolock.RateResult, int64, error) {
	if s, ok := reply.(string); ok {
		if kind, found := strings.CutPrefix(s, "WRONGTYPE "); found {
			return zerolock.RateResult{}, 0, fmt.Errorf("%w (WRONGTYPE: it holds a %s)", ErrNotRateLog, kind)
		}
	}
	vals, ok := reply.([]any)
	if !ok || len(vals) != 5 {
		return zerolock.RateResult{}, 0, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
	}
	var n [5]int64
	for i, v := range vals {
		if n[i], ok = v.(int64); !ok {
			return zerolock.RateResult{}, 0, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
		}
	}
	return zerolock.RateResult{
		Admitted:   n[0] == 1,
		Remaining:  int(n[1]),
		RetryAfter: time.Duration(n[2]) * time.Microsecond,
		Reset:      time.Duration(n[3]) * time.Microsecond,
	}, n[4], nil
}

// wrapRate names the operation and key (see wrapStoreErr).
func (b storeBackend) wrapRate(ctx context.Context, key string, err error) error {
	return wrapStoreErr(ctx, &b.conn, "rate", strconv.Quote(key), err, ErrNotRateLog)
}
