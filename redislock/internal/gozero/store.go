// Package gozero adapts go-zero's *redis.Redis to redislock's Store
// (GoZeroStore), with the CLIENT SETINFO identity check that the start-up
// check refuses on and the lock's commands report once, and the client
// that carries its waiters' subscriptions.
package gozero

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strings"
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
// store and the code was then loaded with SCRIPT LOAD (which go-redis
// sends to every node of a cluster store, and whose scripts Redis 7.4
// never evicts, where it evicts those EVAL added past 500); then by
// EVALSHA of the code's digest, which spares the server reading and
// hashing the code on every call. A NOSCRIPT (the cache was emptied
// since) is answered by EVAL at once, and the store's calls of that
// script go back to EVAL until it is loaded again: go-zero's breaker
// counts one failure per call in flight at that moment, among the
// successes before it, which do not let so few open it. A store that
// refuses EVALSHA itself (a proxy, an ACL) goes back to EVAL for good. A
// failed SCRIPT LOAD is tried again after reloadAfter. EvalSha (a
// caller's own script) is answered with EVAL.
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
	// store) holds the script's code, loaded by SCRIPT LOAD, so
	// EvalScript sends EVALSHA.
	cached [script.Max]atomic.Bool
	// loading, by script.Index: a call is loading the script.
	loading [script.Max]atomic.Bool
	// reloadAt, by script.Index: when a failed SCRIPT LOAD may be tried
	// again, in Unix ns.
	reloadAt [script.Max]atomic.Int64
	// noEvalSha: the store refused EVALSHA itself; it sends EVAL only.
	noEvalSha atomic.Bool
	// refusedAt: when a lock of a key in each bucket (refusalBucket) was
	// last refused on the store, in Unix ns.
	refusedAt [refusalBuckets]atomic.Int64
	// noSetGet: the store's server refused SET with NX and GET (Redis
	// before 7.0), so new locks are not steered to setnxget.lua.
	noSetGet atomic.Bool
}

// refusalBuckets spread the memory of refusals over keys, so that a
// contended key steers its own new locks, and seldom another's.
const refusalBuckets = 64

var refusalSeed = maphash.MakeSeed()

// refusalBucket is key's bucket.
func refusalBucket(key string) int {
	return int(maphash.String(refusalSeed, key) % refusalBuckets)
}

// refusalMemory is how long, in ns, a refusal of a key makes the store's
// new locks of it acquire first with a script that names the holder
// (setnxget.lua), rather than a plain SET NX whose refusal needs a second
// round trip (see RecentlyRefused): a second, or what a test set.
var refusalMemory atomic.Int64

func init() { refusalMemory.Store(int64(time.Second)) }

// SetRefusalMemory sets how long a refusal is remembered, for a test, and
// returns the function that restores it.
func SetRefusalMemory(d time.Duration) (restore func()) {
	old := refusalMemory.Swap(int64(d))
	return func() { refusalMemory.Store(old) }
}

// NoteRefused records that a lock of key was just refused on the store.
func (s *Store) NoteRefused(key string) {
	s.refusedAt[refusalBucket(key)].Store(time.Now().UnixNano())
}

// RecentlyRefused reports whether a lock of key (or of a key in its
// bucket) was refused on the store within the last second, on a server
// that takes SET NX GET: the key is contended, and a new lock's plain SET
// NX would likely be refused too and need acquire.lua after it (two round
// trips where setnxget.lua takes one). A middleware makes a new lock per
// request, so a lock's own memory of its refusals never helps it.
func (s *Store) RecentlyRefused(key string) bool {
	if s.noSetGet.Load() {
		return false
	}
	at := s.refusedAt[refusalBucket(key)].Load()
	return at != 0 && time.Now().UnixNano()-at < refusalMemory.Load()
}

// NoteNoSetGet records that the store's server refused SET NX GET: its
// locks are not steered to setnxget.lua again, whose every refusal
// go-zero's breaker would count.
func (s *Store) NoteNoSetGet() { s.noSetGet.Store(true) }

// NoSetGet reports whether the store's server refused SET NX GET: every
// lock on the store then runs acquire.lua instead of setnxget.lua.
func (s *Store) NoSetGet() bool { return s.noSetGet.Load() }

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
	if s.cached[sc.Index].Load() && !s.noEvalSha.Load() {
		v, err := s.Do(ctx, sc.EvalShaArgs(keys, args...))
		switch {
		case err == nil:
			// First: the error tests below allocate even for a nil error
			// (their errors.As target escapes), two allocations a call.
			return v, nil
		case redis.HasErrorPrefix(err, "NOSCRIPT"):
			// The server's script cache was emptied (a restart, a failover,
			// SCRIPT FLUSH): this EVALSHA ran nothing, so EVAL now. (A
			// resend by go-zero's client after a lost reply may have run
			// it before a failover, as any resend may.)
			s.cached[sc.Index].Store(false)
		case refusesEvalSha(err):
			// A proxy or an ACL that takes EVAL but not EVALSHA: this
			// store sends EVAL from now on, as before issue 30.
			s.noEvalSha.Store(true)
		default:
			return v, err
		}
	}
	v, err := s.Do(ctx, sc.EvalArgs(keys, args...))
	if (err == nil || errors.Is(err, redis.Nil)) && s.shouldLoad(sc) {
		// In this call, once per script and store: one more round trip,
		// never more than loadTimeout (a dial, a node of a cluster that
		// cannot be reached), and its failure is not the caller's.
		s.load(ctx, sc)
	}
	return v, err
}

// loadTimeout bounds a SCRIPT LOAD: the call that sends it has its answer
// already.
const loadTimeout = 250 * time.Millisecond

// shouldLoad reports whether sc should be loaded now, and if so claims
// the load: one at a time, none while the last failure is recent.
func (s *Store) shouldLoad(sc *script.Script) bool {
	if s.noEvalSha.Load() || s.cached[sc.Index].Load() || !s.loading[sc.Index].CompareAndSwap(false, true) {
		return false
	}
	// Checked while claimed: a load that succeeded or failed just before
	// has said so by now.
	if s.cached[sc.Index].Load() || time.Now().UnixNano() < s.reloadAt[sc.Index].Load() {
		s.loading[sc.Index].Store(false)
		return false
	}
	return true
}

// reloadAfter is how long a store waits before it loads a script again
// after a SCRIPT LOAD that failed (a node that cannot be reached, an ACL
// without SCRIPT), its calls going by EVAL meanwhile.
const reloadAfter = 10 * time.Second

// load follows an EVAL of sc that succeeded, its claim taken by
// shouldLoad: the code is sent with SCRIPT LOAD, and EVALSHA is used once
// it succeeded. An EVAL alone would do on a node, but Redis 7.4 evicts
// scripts that EVAL added once it holds 500 of them, and never those that
// SCRIPT LOAD did; on a cluster store go-redis sends SCRIPT LOAD to every
// node, where an EVAL reached one. After a failure the next try waits
// reloadAfter.
func (s *Store) load(ctx context.Context, sc *script.Script) {
	defer s.loading[sc.Index].Store(false)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), loadTimeout)
	defer cancel()
	if sha, err := s.R.ScriptLoadCtx(ctx, sc.Code); err == nil && sha == sc.CodeSHA {
		s.cached[sc.Index].Store(true)
		return
	}
	s.reloadAt[sc.Index].Store(time.Now().Add(reloadAfter).UnixNano())
}

// refusesEvalSha reports an error reply that refuses the EVALSHA command
// itself (an unknown command to a proxy, NOPERM from an ACL): it ran
// nothing.
func refusesEvalSha(err error) bool {
	var reply redis.Error
	if err == nil || !errors.As(err, &reply) {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "'evalsha'") &&
		(strings.HasPrefix(msg, "noperm") || strings.Contains(msg, "unknown command"))
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
