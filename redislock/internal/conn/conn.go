// Package conn is a redislock Store probed once, when a lock or a backend
// is built: whether it is go-zero's adapter, a go-redis client that sends
// a command once (a Processor), a cluster, a Ring. The locks ask a Conn
// instead of switching on the store's type at every call, and run their
// scripts through it: EVALSHA falling back to EVAL, or on go-zero's store
// EVAL of the code until the server holds it, which its circuit breaker
// needs (see internal/gozero).
package conn

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock/internal/deadline"
	"github.com/zerolock/zerolock/redislock/internal/errs"
	"github.com/zerolock/zerolock/redislock/internal/gozero"
	"github.com/zerolock/zerolock/redislock/internal/script"
)

// Store is redislock.Store: the small part of a Redis client a lock needs.
type Store interface {
	SetArgs(ctx context.Context, key string, value any, a redis.SetArgs) *redis.StatusCmd
	PTTL(ctx context.Context, key string) *redis.DurationCmd
	Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd
	EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd
}

// A Processor sends a command its caller built: go-redis's clients are
// processors, go-zero's store is not.
type Processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// kind is what a store is, as far as a lock cares.
type kind uint8

const (
	other   kind = iota // any other Store
	goZero              // go-zero's store, through GoZeroStore
	node                // *redis.Client (a node, or Sentinel's failover client)
	cluster             // *redis.ClusterClient
	ring                // *redis.Ring
)

// Conn is a Store with what it can do, probed once by Wrap. It is a value,
// copied into each lock: wrapping allocates nothing.
type Conn struct {
	Store  Store
	GoZero *gozero.Store // the adapter, when the store is go-zero's
	Proc   Processor     // the store, when it can send a command once
	kind   kind
}

// Wrap probes store.
func Wrap(store Store) Conn {
	c := Conn{Store: store}
	switch s := store.(type) {
	case *gozero.Store:
		c.GoZero, c.kind = s, goZero
		return c
	case *redis.Client:
		c.kind = node
	case *redis.ClusterClient:
		c.kind = cluster
	case *redis.Ring:
		c.kind = ring
	}
	c.Proc, _ = store.(Processor)
	return c
}

// IsGoZero reports whether the store is go-zero's.
func (c *Conn) IsGoZero() bool { return c.kind == goZero }

// Ring reports whether the store is a go-redis Ring, which places keys by
// hash tag over its shards.
func (c *Conn) Ring() bool { return c.kind == ring }

// Clustered reports whether the store spreads keys over the slots of a
// Redis Cluster (or, a Ring, over shards), so that one script may touch
// only keys of one slot.
func (c *Conn) Clustered() bool {
	switch c.kind {
	case cluster, ring: // a Ring shards keys over servers: one script, one shard
		return true
	case goZero:
		return c.GoZero.Clustered()
	}
	return false
}

// Guard is the guard WithDeadlineGuard (requested) asks for on the store.
func (c *Conn) Guard(requested bool) deadline.Guard {
	if !requested {
		return deadline.None
	}
	return deadline.For(c.honoursDeadlines(), true)
}

// honoursDeadlines reports whether the store's calls return by their
// context's deadline: go-redis clients made with ContextTimeoutEnabled.
func (c *Conn) honoursDeadlines() bool {
	switch c.kind {
	case node:
		return c.Store.(*redis.Client).Options().ContextTimeoutEnabled
	case cluster:
		return c.Store.(*redis.ClusterClient).Options().ContextTimeoutEnabled
	case ring:
		return c.Store.(*redis.Ring).Options().ContextTimeoutEnabled
	}
	return false
}

// Check is go-zero's start-up identity check (see gozero.CheckStore),
// which refuses what the locks' commands only report; other stores have
// nothing to check.
func (c *Conn) Check(ctx context.Context) error {
	if c.kind == goZero {
		return c.GoZero.Check(ctx)
	}
	return nil
}

// stateReloader is a cluster client that can refresh its slot map
// (go-redis's *ClusterClient).
type stateReloader interface {
	ReloadState(ctx context.Context)
}

// ReloadsState reports whether the store keeps a slot map that
// ReloadState refreshes (a cluster client).
func (c *Conn) ReloadsState() bool {
	_, ok := c.Store.(stateReloader)
	return ok
}

// ReloadState makes a cluster client refresh its slot map; other stores
// have none.
func (c *Conn) ReloadState(ctx context.Context) {
	if r, ok := c.Store.(stateReloader); ok {
		r.ReloadState(ctx)
	}
}

// Pipeliner is a client that runs several commands on one connection.
type Pipeliner interface {
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// PipelinerFor returns a client whose pipelines go to the connection that
// serves key, for WAIT to count that connection's write, or an error
// wrapping ErrReplicaAcksUnsupported where there is none (go-zero's
// cluster store, a Ring, another Store).
func (c *Conn) PipelinerFor(ctx context.Context, key string) (Pipeliner, error) {
	switch c.kind {
	case cluster:
		return c.Store.(*redis.ClusterClient).MasterForKey(ctx, key)
	case node:
		return c.Store.(*redis.Client), nil
	case goZero:
		if c.GoZero.R.Type != "cluster" {
			return c.GoZero.Pipeliner(), nil
		}
	}
	return nil, errs.ReplicaAcksUnsupported
}

// Do sends a command whose arguments the caller built through go-zero's
// store, as they are; the store must be go-zero's.
func (c *Conn) Do(ctx context.Context, args []any) (any, error) {
	return c.GoZero.Do(ctx, args)
}

// Send sends a command through go-zero's store (so its breaker, metrics
// and tracing see it) or a go-redis client; keyed says the command's first
// argument is its key (for cluster routing), and such a command is sent
// once on a go-redis client. Other stores cannot send it.
func (c *Conn) Send(ctx context.Context, keyed bool, args ...any) (any, error) {
	if c.kind == goZero {
		return c.GoZero.Do(ctx, args)
	}
	if c.Proc == nil {
		return nil, errors.New("redislock: the store cannot send commands")
	}
	cmd := redis.NewCmd(ctx, args...)
	var err error
	if keyed {
		cmd.SetFirstKeyPos(1)
		err = c.Proc.Process(ctx, OnceCmd{cmd})
	} else {
		err = c.Proc.Process(ctx, cmd)
	}
	if err != nil {
		return nil, err
	}
	return cmd.Val(), nil
}

// Run executes s with EVALSHA and falls back to EVAL (which also caches
// the script on the server) when the server answers NOSCRIPT. On go-zero's
// store it runs the adapter's EvalScript (see internal/gozero).
func (c *Conn) Run(ctx context.Context, s *script.Script, keys []string, args ...any) *redis.Cmd {
	if c.kind == goZero {
		cmd := redis.NewCmd(ctx)
		val, err := c.GoZero.EvalScript(ctx, s, keys, args)
		gozero.SetCmd(cmd, val, err)
		return cmd
	}
	cmd := c.Store.EvalSha(ctx, s.SHA, keys, args...)
	if noScript(cmd.Err()) {
		return c.Store.Eval(ctx, s.Src, keys, args...)
	}
	return cmd
}

// Eval is Run's reply, without Run's command on go-zero's store, whose
// client answers with the reply.
func (c *Conn) Eval(ctx context.Context, s *script.Script, keys []string, args ...any) (any, error) {
	if c.kind == goZero {
		return c.GoZero.EvalScript(ctx, s, keys, args)
	}
	return c.Run(ctx, s, keys, args...).Result()
}

// EvalOnce is RunOnce's reply, without RunOnce's command on go-zero's
// store, whose client answers with the reply.
func (c *Conn) EvalOnce(ctx context.Context, s *script.Script, keys []string, args ...any) (any, error) {
	if c.kind == goZero {
		return c.GoZero.EvalScript(ctx, s, keys, args)
	}
	return c.RunOnce(ctx, s, keys, args...).Result()
}

// EvalOnceBoxed is EvalOnce for a caller that keeps its keys boxed, on a
// Processor (Proc is not nil): keysArgs holds numKeys keys, then the
// arguments, and the command boxes nothing again.
func (c *Conn) EvalOnceBoxed(ctx context.Context, s *script.Script, numKeys int, keysArgs []any) (any, error) {
	cmd := script.EvalCmdBoxed(ctx, "evalsha", s.SHAArg, numKeys, keysArgs)
	_ = c.Proc.Process(ctx, OnceCmd{cmd})
	if noScript(cmd.Err()) {
		cmd = script.EvalCmdBoxed(ctx, "eval", s.Src, numKeys, keysArgs)
		_ = c.Proc.Process(ctx, OnceCmd{cmd})
	}
	return cmd.Result()
}

// RunOnce is Run, except that on a Processor (a go-redis client) the
// commands are sent once: a lost reply is an error, never a resend (see
// OnceCmd). Other stores resend as their client does.
func (c *Conn) RunOnce(ctx context.Context, s *script.Script, keys []string, args ...any) *redis.Cmd {
	if c.Proc == nil {
		return c.Run(ctx, s, keys, args...)
	}
	cmd := script.EvalCmd(ctx, "evalsha", s.SHAArg, keys, args)
	_ = c.Proc.Process(ctx, OnceCmd{cmd})
	if noScript(cmd.Err()) {
		cmd = script.EvalCmd(ctx, "eval", s.Src, keys, args)
		_ = c.Proc.Process(ctx, OnceCmd{cmd})
	}
	return cmd
}

// noScript reports a NOSCRIPT reply: the server does not hold the script.
// It looks at err only when there is one: redis.HasErrorPrefix allocates
// on every call, a nil error included.
func noScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}

// OnceBoolCmd and OnceCmd are commands go-redis must not resend when their
// reply is lost (it resends after a reset connection or a read timeout),
// because the resend's answer would be wrong: a second SET NX finds the
// key the first one took and says "not set"; a second release finds the
// key the first one deleted and says "not held". Sent once, a lost reply
// is an error, whose outcome the next call on the instance settles.
type (
	OnceBoolCmd struct{ *redis.BoolCmd }
	OnceCmd     struct{ *redis.Cmd }
)

// NoRetry tells go-redis not to resend the command.
func (OnceBoolCmd) NoRetry() bool { return true }

// NoRetry tells go-redis not to resend the command.
func (OnceCmd) NoRetry() bool { return true }
