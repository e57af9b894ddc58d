package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
)

// GoZeroStore adapts go-zero's *redis.Redis (a node or a cluster, as its
// RedisConf says) to Store. Commands go through go-zero's client, so its
// circuit breaker, metrics and tracing see them. Before its first command
// it checks, once per store, that the server accepts the CLIENT SETINFO
// go-zero sends on new connections (NewBackend's Check runs the same check
// at start-up); where it does not, every command returns an error wrapping
// ErrIdentityRejected, which names the fix.
func GoZeroStore(store *zredis.Redis) Store {
	return goZeroStore{r: store, id: identityFor(store), identityOff: identityOff(store)}
}

// goZeroStore is GoZeroStore's adapter (docs/REDISLOCK-INTERNALS.md tells
// the whole story).
//
// go-zero's breaker counts every error reply as a failure (its acceptable
// errors are only redis.Nil and context.Canceled), including the NOSCRIPT
// that EVALSHA gets from a server whose script cache is empty: a fresh
// server, a promoted replica, or one after SCRIPT FLUSH. The adapter
// therefore answers EvalSha with EVAL, which cannot get NOSCRIPT, sending
// the script's code without its comments (a few hundred bytes).
//
// A lock on this store acquires with SET NX PX, the cheapest acquire for
// the server, whose success reply is a status. go-zero's client resends a
// command after a lost reply and cannot be told not to, and a resent SET
// NX answers "not set" for the key it took, so a refusal is followed by
// acquire.lua, which recognises our own token; the instance's next tries
// then send setnxget.lua (SET NX PX GET in a script: 1 when taken, else
// the holder's token, in one round trip) until one succeeds. SET NX PX GET
// is never sent as a command: its nil reply on success reaches go-redis as
// the redis.Nil error, which it runs through its retry and bad-connection
// checks (22 allocations per cycle, 10 to 25% of the client's CPU in
// BenchmarkGoZeroParallel's profiles).
//
// The identity check (identity.go) runs before the first command so that
// a store whose server rejects CLIENT SETINFO fails every command with
// ErrIdentityRejected at once, instead of failing when a burst of new
// connections opens go-zero's breaker.
type goZeroStore struct {
	r  *zredis.Redis
	id *identityCheck
	// identityOff: the store never sends CLIENT SETINFO, so the server's
	// verdict does not matter.
	identityOff bool
}

// ready is nil once the store is known to be safe: a field or an atomic
// load after the first check.
func (s goZeroStore) ready(ctx context.Context) error {
	if s.identityOff || serverVerdict(s.id.verdict.Load()) == verdictAccepts {
		return nil
	}
	return s.id.check(ctx, s.r)
}

// SetArgs sends the options a lock uses (NX or XX, PX, GET); it answers
// like go-redis: the old value with GET, redis.Nil when nothing was set or
// there was no old value.
func (s goZeroStore) SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd {
	args := []any{"set", key, value}
	if a.TTL > 0 {
		args = append(args, "px", a.TTL.Milliseconds())
	}
	if a.Mode != "" {
		args = append(args, a.Mode)
	}
	if a.Get {
		args = append(args, "get")
	}
	cmd := redis.NewStatusCmd(ctx, args...)
	if err := s.ready(ctx); err != nil {
		cmd.SetErr(err)
		return cmd
	}
	val, err := s.r.DoCtx(ctx, args...)
	if err != nil {
		cmd.SetErr(err)
		return cmd
	}
	if v, ok := val.(string); ok {
		cmd.SetVal(v)
	} else {
		cmd.SetErr(fmt.Errorf("%w: %v", ErrUnexpectedReply, val))
	}
	return cmd
}

func (s goZeroStore) PTTL(ctx context.Context, key string) *redis.DurationCmd {
	cmd := redis.NewDurationCmd(ctx, time.Millisecond, "pttl", key)
	if err := s.ready(ctx); err != nil {
		cmd.SetErr(err)
		return cmd
	}
	val, err := s.r.DoCtx(ctx, cmd.Args()...)
	if err != nil {
		cmd.SetErr(err)
		return cmd
	}
	ms, ok := val.(int64)
	switch {
	case !ok:
		cmd.SetErr(ErrUnexpectedReply)
	case ms < 0: // -2 absent, -1 no expiry: go-redis keeps them unscaled
		cmd.SetVal(time.Duration(ms))
	default:
		cmd.SetVal(time.Duration(ms) * time.Millisecond)
	}
	return cmd
}

// eval runs sc by its code with EVAL and answers as go-zero does, without a
// command of its own.
func (s goZeroStore) eval(ctx context.Context, sc *script, keys []string, args []any) (any, error) {
	return s.do(ctx, sc.evalArgs(keys, args...))
}

// do sends a command whose arguments the caller built, through go-zero's
// client as they are (go-zero's EvalCtx would box the script and the keys
// again), and answers as go-zero does.
func (s goZeroStore) do(ctx context.Context, args []any) (any, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	return s.r.DoCtx(ctx, args...)
}

func (s goZeroStore) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	if err := s.ready(ctx); err != nil {
		cmd.SetErr(err)
		return cmd
	}
	val, err := s.r.EvalCtx(ctx, script, keys, args...)
	setCmd(cmd, val, err)
	return cmd
}

// EvalSha runs the script by its source with EVAL; see goZeroStore.
func (s goZeroStore) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	if sc, ok := scriptsBySHA[sha1]; ok {
		return s.Eval(ctx, sc.code, keys, args...)
	}
	cmd := redis.NewCmd(ctx)
	if err := s.ready(ctx); err != nil {
		cmd.SetErr(err)
		return cmd
	}
	val, err := s.r.EvalShaCtx(ctx, sha1, keys, args...)
	setCmd(cmd, val, err)
	return cmd
}

func setCmd(cmd *redis.Cmd, val any, err error) {
	if err != nil {
		cmd.SetErr(err)
		return
	}
	cmd.SetVal(val)
}
