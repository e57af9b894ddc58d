package redislock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock/internal/deadline"
)

// A turn lets one acquire attempt or release of a MultiLock run at a time.
// Across Cluster slots an attempt takes the keys slot by slot and gives
// back what it took when it fails; a release, or another attempt of the
// same instance (same token) running meanwhile, could otherwise free keys
// the first has just taken, and the first would then return true holding
// only the slots after them.
type turn chan struct{}

func newTurn() turn { return make(turn, 1) }

// take waits for the turn, or returns ctx's error when ctx ends first.
func (t turn) take(ctx context.Context) error {
	select {
	case t <- struct{}{}:
		return nil
	default:
	}
	select {
	case t <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// give hands the turn on.
func (t turn) give() { <-t }

// multiAttempt is what one acquire attempt learned.
type multiAttempt struct {
	ok      bool
	refused int           // the index in keys of the key that refused
	retryIn time.Duration // that key's remaining time
	err     error
	// settled: the attempt ended with none of the keys holding the token,
	// as far as this instance knows (a refusal whose give-back succeeded).
	settled bool
}

// try makes one acquire attempt in the instance's turn, keeping the
// bookkeeping of the hold; waiting (a waiting acquire's try, made after it
// subscribed) marks the refusing key's hold (or sets its waiter flag: see
// waiters.go). When WithDeadlineGuard
// returns at ctx's end, the attempt finishes in the background, still in
// its turn, and records its own outcome.
func (m *MultiLock) try(ctx context.Context, px time.Duration, waiting bool) multiAttempt {
	r, err := deadline.Within(ctx, m.guard, func() multiAttempt {
		if err := m.turn.take(ctx); err != nil {
			return multiAttempt{err: err}
		}
		defer m.turn.give()
		sent := monoNow()
		reentrant, seen := m.state.beginAcquire()
		r := m.attempt(ctx, px, reentrant, waiting)
		m.state.endAcquire(seen, !r.settled)
		switch {
		case r.ok:
			m.noteAcquired(sent, px)
		case r.settled:
			m.noteRefused()
		}
		return r
	})
	if err != nil {
		return multiAttempt{err: err}
	}
	return r
}

// attempt takes the groups in order; reentrant reports that the instance
// may have held keys of the lock before it (see holdState), waiting that
// a refusal marks the refusing key's hold (or sets its waiter flag).
//
// A refusal, or a key of another type, is a known outcome: the lock is not
// held, and the attempt gives back every key of it this instance may hold,
// so that it holds none and never waits holding some: the groups it took
// when the instance held nothing before, all the groups otherwise (its
// hold was already broken: a key it held is another's now).
//
// An error leaves the failed group's outcome unknown. The attempt then
// gives back only what it knows it took: the keys the earlier groups
// reported taken fresh, and the failed group when the instance held
// nothing before. Keys the instance held before are left alone, as
// RedisLock leaves its key after a failed re-entrant acquire.
func (m *MultiLock) attempt(ctx context.Context, px time.Duration, reentrant, waiting bool) multiAttempt {
	var fresh []keyGroup // what the earlier groups took fresh, when reentrant
	for i, g := range m.groups {
		var cmd *redis.Cmd
		if waiting {
			keys := append(g.keys[:len(g.keys):len(g.keys)], make([]string, len(g.keys))...)
			for j, k := range g.keys {
				keys[len(g.keys)+j] = waiterFlag(k)
			}
			cmd = m.conn.Run(ctx, multiAcquireScript, keys, m.token, px.Milliseconds(),
				waiterFlagTTL(m.waitOpts).Milliseconds())
		} else {
			cmd = m.conn.Run(ctx, multiAcquireScript, g.keys, m.token, px.Milliseconds())
		}
		reply, err := cmd.Result()
		var (
			r     multiAttempt
			taken keyGroup
		)
		if err == nil {
			r, taken, err = parseMultiAcquire(reply, g, reentrant)
		}
		switch {
		case err != nil && !errors.Is(err, ErrNotLockKey):
			back := fresh
			if !reentrant {
				back = m.groups[:i+1]
			}
			if gbErr := m.giveBack(ctx, back); gbErr != nil {
				err = errors.Join(err, fmt.Errorf("give back the keys taken: %w", gbErr))
			}
			return multiAttempt{err: err}
		case err != nil || !r.ok:
			back := m.groups[:i]
			if reentrant {
				back = m.groups
			}
			if gbErr := m.giveBack(ctx, back); gbErr != nil {
				return multiAttempt{err: errors.Join(err, fmt.Errorf("give back the keys taken: %w", gbErr))}
			}
			r.err, r.settled = err, true
			return r
		}
		if len(taken.keys) > 0 {
			fresh = append(fresh, taken)
		}
	}
	return multiAttempt{ok: true}
}

// parseMultiAcquire reads multilock_acquire.lua's reply for g: 0 when it
// took every key fresh, {0, i...} listing (1-based) those it took fresh,
// the 1-based index and PTTL of the key that refused, or a key of another
// type (ErrNotLockKey). When wantTaken, it also returns the group of the
// keys taken fresh.
func parseMultiAcquire(reply any, g keyGroup, wantTaken bool) (multiAttempt, keyGroup, error) {
	switch reply := reply.(type) {
	case int64:
		if reply == 0 {
			if !wantTaken {
				g = keyGroup{}
			}
			return multiAttempt{ok: true}, g, nil
		}
	case []any:
		if len(reply) == 0 {
			break
		}
		if first, ok := reply[0].(int64); ok && first == 0 {
			idx := make([]int, 0, len(reply)-1)
			for _, v := range reply[1:] {
				i, ok := v.(int64)
				if !ok || i < 1 || int(i) > len(g.keys) {
					return multiAttempt{}, keyGroup{}, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
				}
				idx = append(idx, int(i)-1)
			}
			var taken keyGroup
			if wantTaken && len(idx) > 0 {
				taken = g.subset(idx)
			}
			return multiAttempt{ok: true}, taken, nil
		}
		if len(reply) == 2 {
			i, okI := reply[0].(int64)
			ttl, okT := reply[1].(int64)
			if okI && okT && i >= 1 && int(i) <= len(g.keys) {
				return multiAttempt{refused: g.first + int(i) - 1, retryIn: max(time.Duration(ttl), 0) * time.Millisecond}, keyGroup{}, nil
			}
		}
	case string:
		if f := strings.Fields(reply); len(f) == 3 && f[0] == "WRONGTYPE" {
			if i, err := strconv.Atoi(f[1]); err == nil && i >= 1 && i <= len(g.keys) {
				return multiAttempt{}, keyGroup{}, notLockKey(g.keys[i-1], f[2])
			}
		}
	}
	return multiAttempt{}, keyGroup{}, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
}

// subset is the group of g's keys at the indices idx (in g.keys), for a
// release.
func (g keyGroup) subset(idx []int) keyGroup {
	if len(idx) == len(g.keys) {
		return g
	}
	s := keyGroup{first: g.first, releaseArgs: []any{g.releaseArgs[0]}}
	channels := len(g.releaseArgs) > 1
	for _, i := range idx {
		s.keys = append(s.keys, g.keys[i])
		if channels {
			s.releaseArgs = append(s.releaseArgs, g.releaseArgs[1+i])
		}
	}
	return s
}

// notLockKey is the error of key, which holds a value of type kind.
func notLockKey(key, kind string) error {
	return fmt.Errorf("%w: %q (WRONGTYPE: it holds a %s)", ErrNotLockKey, key, kind)
}

// giveBack releases groups, announcing each key it frees, even when ctx
// has ended: an acquire that fails must not leave keys taken.
func (m *MultiLock) giveBack(ctx context.Context, groups []keyGroup) error {
	if len(groups) == 0 {
		return nil
	}
	_, err := m.release(context.WithoutCancel(ctx), groups)
	return err
}

// release frees the keys of groups still holding the token and reports how
// many it freed, going on past a group that fails or reports a key of
// another type.
func (m *MultiLock) release(ctx context.Context, groups []keyGroup) (int, error) {
	var (
		freed int
		errs  []error
	)
	for _, g := range groups {
		reply, err := m.conn.EvalOnce(ctx, multiReleaseScript, g.keys, g.releaseArgs...)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := parseMultiRelease(reply, g)
		freed += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	return freed, errors.Join(errs...)
}

// parseMultiRelease reads multilock_release.lua's reply for g: how many
// keys it freed, and ErrNotLockKey when it reported a key of another type.
func parseMultiRelease(reply any, g keyGroup) (int, error) {
	switch reply := reply.(type) {
	case int64:
		return int(reply), nil
	case []any:
		if len(reply) == 3 {
			n, okN := reply[0].(int64)
			i, okI := reply[1].(int64)
			kind, okK := reply[2].(string)
			if okN && okI && okK && i >= 1 && int(i) <= len(g.keys) {
				return int(n), notLockKey(g.keys[i-1], kind)
			}
		}
	}
	return 0, fmt.Errorf("%w: %v", ErrUnexpectedReply, reply)
}
