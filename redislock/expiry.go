package redislock

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/internal/ctxdone"
	"github.com/zerolock/zerolock/redislock/internal/conn"
)

// holdExpiry is how long a lock's holds last: the expiry WithExpiry sets
// (and a RedisLock's or RedLock's SetExpire or SetExpiry changes), read at
// each acquire and renewal, and the tolerance added to what Redis is sent.
// Every kind of lock embeds one.
type holdExpiry struct {
	expiry    atomic.Int64 // time.Duration
	tolerance time.Duration
	refused   error // the constructor's refusal of an option (see Option)
}

// init sets the expiry and tolerance of a lock made with o.
func (e *holdExpiry) init(o *options) {
	e.tolerance = o.tolerance
	e.expiry.Store(int64(o.expiry))
}

// px is the expiry sent to Redis: the expiry plus the tolerance, rounded up
// to whole milliseconds. It returns the refusal of an option the lock was
// made with, which every acquire and refresh asks px for first, and
// ErrInvalidExpiry for a negative expiry or a sum under a millisecond.
func (e *holdExpiry) px() (time.Duration, error) {
	if e.refused != nil {
		return 0, e.refused
	}
	expiry := time.Duration(e.expiry.Load())
	px := expiry + e.tolerance
	if expiry < 0 || px < time.Millisecond {
		return 0, ErrInvalidExpiry
	}
	return (px + time.Millisecond - 1).Truncate(time.Millisecond), nil
}

// wrapStoreErr names the operation and what it was on (what, quoted
// already), and makes errors.Is(err, ctx.Err()) hold whenever the context
// has ended, whatever the store returned.
//
// A failure that is neither a Redis reply nor one of the lock's own
// verdicts (ours: a key of the wrong kind, say) makes a cluster client
// refresh its slot map: go-redis otherwise keeps routing to a killed master
// until its map is 10 s old, although the cluster promoted the replica
// within a few seconds.
func wrapStoreErr(ctx context.Context, c *conn.Conn, op, what string, err error, ours ...error) error {
	if c.ReloadsState() && !isReplyOrOurs(err, ours) {
		c.ReloadState(context.WithoutCancel(ctx))
	}
	if ctxErr := ctxdone.Err(ctx); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("redislock: %s %s: %w (%w)", op, what, err, ctxErr)
	}
	return fmt.Errorf("redislock: %s %s: %w", op, what, err)
}

// isReplyOrOurs reports whether err is a Redis reply or one of ours.
func isReplyOrOurs(err error, ours []error) bool {
	var reply redis.Error
	if errors.As(err, &reply) {
		return true
	}
	for _, o := range ours {
		if errors.Is(err, o) {
			return true
		}
	}
	return false
}
