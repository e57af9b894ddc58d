// Package gozero adapts go-zero's *redis.Redis to redislock's Store
// (GoZeroStore), with the CLIENT SETINFO identity check that the start-up
// check refuses on and the lock's commands report once, and the client
// that carries its waiters' subscriptions.
package gozero

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/redislock/internal/errs"
	"github.com/zerolock/zerolock/redislock/internal/script"
)

// New adapts go-zero's *redis.Redis to redislock's Store; it is
// redislock.GoZeroStore. The adapter of a store is made once and handed
// out again, so that GoZeroStore(r) == GoZeroStore(r), as when it was a
// comparable value, and a lock made per request costs no adapter.
func New(store *zredis.Redis) *Store {
	if store == nil {
		return &Store{id: identityFor(nil)} // checks and commands refuse it
	}
	if s, ok := adapters.Load(store); ok {
		return s.(*Store)
	}
	fresh := &Store{R: store, id: identityFor(store)}
	fresh.settled.Store(identityOff(store))
	s, _ := adapters.LoadOrStore(store, fresh)
	return s.(*Store)
}

// adapters are the adapters New made, by store: go-zero's stores live as
// long as the process, as its clients do.
var adapters sync.Map // *zredis.Redis -> *Store

// Store is GoZeroStore's adapter (docs/REDISLOCK-INTERNALS.md tells the
// whole story).
//
// go-zero's breaker counts every error reply as a failure (its acceptable
// errors are only redis.Nil and context.Canceled), including the NOSCRIPT
// that EVALSHA gets from a server whose script cache is empty: a fresh
// server, a promoted replica, or one after SCRIPT FLUSH. Fifty first calls
// answered NOSCRIPT at once open the breaker for the whole store, as they
// do for go-zero's own PeriodLimit on a fresh server. The adapter therefore
// runs a script (EvalScript) by EVAL of its code, without its comments,
// which cannot get NOSCRIPT, until an EVAL of it has succeeded on this
// store, which leaves the code in the server's script cache; then by
// EVALSHA of the code's digest, which spares the server reading and
// hashing the code on every call. On a cluster store, whose EVAL caches
// the code on one node only, the code is then loaded on every node (SCRIPT
// LOAD, which go-redis sends to each shard) before EVALSHA is used. A
// NOSCRIPT (the cache was emptied since) is answered by EVAL at once, and
// the store's calls of that script go back to EVAL until one succeeds: go-
// zero's breaker counts one failure per call in flight at that moment,
// among the successes before it, which do not let so few open it. EvalSha
// (a caller's own script) is answered with EVAL.
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
// Before its first command the adapter asks the server's verdict on the
// CLIENT SETINFO go-zero sends on new connections (identity.go, once per
// address) and, when the server rejects it, logs the hazard and the fix
// once per address; the commands then go on, as go-zero's own lock's do
// (see Ready). Only the start-up check, Check, refuses such a store.
type Store struct {
	R  *zredis.Redis
	id *identityCheck
	// settled: the store sends no CLIENT SETINFO, or its server's verdict
	// is known and was reported; Ready has nothing left to do.
	settled atomic.Bool
	// cached, by script.Index: the store's server (every node of a cluster
	// store) holds the script's code, so EvalScript sends EVALSHA.
	cached [script.Max]atomic.Bool
	// loading, by script.Index: a call is loading the script on a cluster
	// store's nodes.
	loading [script.Max]atomic.Bool
}

// SetArgs sends the options a lock uses (NX or XX, PX, GET); it answers
// like go-redis: the old value with GET, redis.Nil when nothing was set or
// there was no old value.
func (s *Store) SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd {
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
	if err := s.Ready(ctx); err != nil {
		cmd.SetErr(err)
		return cmd
	}
	val, err := s.R.DoCtx(ctx, args...)
	if err != nil {
		cmd.SetErr(err)
		return cmd
	}
	if v, ok := val.(string); ok {
		cmd.SetVal(v)
	} else {
		cmd.SetErr(fmt.Errorf("%w: %v", errs.UnexpectedReply, val))
	}
	return cmd
}

func (s *Store) PTTL(ctx context.Context, key string) *redis.DurationCmd {
	cmd := redis.NewDurationCmd(ctx, time.Millisecond, "pttl", key)
	if err := s.Ready(ctx); err != nil {
		cmd.SetErr(err)
		return cmd
	}
	val, err := s.R.DoCtx(ctx, cmd.Args()...)
	if err != nil {
		cmd.SetErr(err)
		return cmd
	}
	ms, ok := val.(int64)
	switch {
	case !ok:
		cmd.SetErr(errs.UnexpectedReply)
	case ms < 0: // -2 absent, -1 no expiry: go-redis keeps them unscaled
		cmd.SetVal(time.Duration(ms))
	default:
		cmd.SetVal(time.Duration(ms) * time.Millisecond)
	}
	return cmd
}

// EvalScript runs sc, by EVALSHA of its code's digest once the server
// holds the code, else by EVAL of its code (see Store), and answers as
// go-zero does, without a command of its own.
func (s *Store) EvalScript(ctx context.Context, sc *script.Script, keys []string, args []any) (any, error) {
	if s.cached[sc.Index].Load() {
		v, err := s.Do(ctx, sc.EvalShaArgs(keys, args...))
		if !redis.HasErrorPrefix(err, "NOSCRIPT") {
			return v, err
		}
		// The server's script cache was emptied (a restart, a failover,
		// SCRIPT FLUSH): nothing ran, so EVAL now.
		s.cached[sc.Index].Store(false)
	}
	v, err := s.Do(ctx, sc.EvalArgs(keys, args...))
	if err == nil || errors.Is(err, redis.Nil) {
		s.noteCached(ctx, sc)
	}
	return v, err
}

// noteCached records that an EVAL of sc succeeded: on a node store its
// server now holds the code; a cluster store's other nodes are sent it
// first, by one call at a time.
func (s *Store) noteCached(ctx context.Context, sc *script.Script) {
	if !s.Clustered() {
		s.cached[sc.Index].Store(true)
		return
	}
	if !s.loading[sc.Index].CompareAndSwap(false, true) {
		return
	}
	defer s.loading[sc.Index].Store(false)
	if sha, err := s.R.ScriptLoadCtx(ctx, sc.Code); err == nil && sha == sc.CodeSHA {
		s.cached[sc.Index].Store(true)
	}
}

// Do sends a command whose arguments the caller built, through go-zero's
// client as they are (go-zero's EvalCtx would box the script and the keys
// again), and answers as go-zero does.
func (s *Store) Do(ctx context.Context, args []any) (any, error) {
	if err := s.Ready(ctx); err != nil {
		return nil, err
	}
	return s.R.DoCtx(ctx, args...)
}

func (s *Store) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	if err := s.Ready(ctx); err != nil {
		cmd.SetErr(err)
		return cmd
	}
	val, err := s.R.EvalCtx(ctx, script, keys, args...)
	SetCmd(cmd, val, err)
	return cmd
}

// EvalSha runs the script by its source with EVAL; see Store.
func (s *Store) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	if sc, ok := script.Lookup(sha1); ok {
		return s.Eval(ctx, sc.Code, keys, args...)
	}
	cmd := redis.NewCmd(ctx)
	if err := s.Ready(ctx); err != nil {
		cmd.SetErr(err)
		return cmd
	}
	val, err := s.R.EvalShaCtx(ctx, sha1, keys, args...)
	SetCmd(cmd, val, err)
	return cmd
}

// SetCmd sets cmd's reply from a go-zero answer.
func SetCmd(cmd *redis.Cmd, val any, err error) {
	if err != nil {
		cmd.SetErr(err)
		return
	}
	cmd.SetVal(val)
}

// Check tells whether the store can take locks without tripping go-zero's
// circuit breaker (see CheckStore): unlike Ready, it refuses a store whose
// server rejects CLIENT SETINFO, with ErrIdentityRejected.
func (s *Store) Check(ctx context.Context) error {
	if s.R != nil { // a nil store is check's to refuse
		if err := checkAddr(s.R.Addr); err != nil {
			return err
		}
	}
	return s.id.check(ctx, s.R)
}

// Clustered reports whether the store is go-zero's cluster store.
func (s *Store) Clustered() bool {
	return s.R.Type == zredis.ClusterType
}

// Pipeliner is the store as a client that runs several commands on one
// connection, for WAIT to count that connection's write (a node store
// only: a cluster store's pipeline may span nodes).
func (s *Store) Pipeliner() Pipeliner { return Pipeliner{s} }

// Pipeliner runs a pipeline through go-zero's client.
type Pipeliner struct{ s *Store }

// Pipelined runs fn's commands in one pipeline, once the store is ready.
func (p Pipeliner) Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	if err := p.s.Ready(ctx); err != nil {
		return nil, err
	}
	var cmds []redis.Cmder
	err := p.s.R.PipelinedCtx(ctx, func(pipe redis.Pipeliner) error {
		if err := fn(pipe); err != nil {
			return err
		}
		var err error
		cmds, err = pipe.Exec(ctx)
		return err
	})
	return cmds, err
}
