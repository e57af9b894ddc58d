// Package native is the compare-and-delete a quiet release sends instead
// of release.lua, and each store's memory of whether its server has one.
package native

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/errs"
)

// A release that announces nothing (WithoutWakeups) is a compare-and-
// delete, which Valkey 9 has as a command, DELIFEQ key value, and Redis 8.4
// as DELEX key IFEQ value: no script to run, so less Redis CPU than
// release.lua (docs/BENCHMARKS.md). Whether a store's server has one is
// asked once per store with COMMAND INFO, whose answer is never an error
// reply, so go-zero's breaker, which counts every error reply as a failure,
// does not count the question. Servers without either command, and stores
// that cannot send a command of the lock's own (a Store that is neither a
// go-redis client nor go-zero's), release with the script.
//
// A store can change under its locks: a failover to a replica of an older
// version, an ACL that forbids the command. A release whose command the
// server refuses ("unknown command", NOPERM: nothing was deleted) runs the
// script in the same call, and the store is marked as having none; it is
// asked again after recheck, so a server upgraded in place, or a
// failover back, is noticed.

// Command is how a store's server deletes a key only while it holds
// a value.
type Command int32

const (
	Unknown  Command = iota // not asked yet, or no clear answer
	ByScript                // no such command: release.lua
	DelIfEq                 // Valkey 9: DELIFEQ key value
	DelEx                   // Redis 8.4: DELEX key IFEQ value
)

const (
	// recheck is how long a store found without the command goes
	// before it is asked again.
	recheck = time.Minute
	// retry is how long a store goes before it is asked again when
	// the question got no clear answer (the server down, a timeout).
	retry = time.Second
)

// Release is one store's memory of its server's compare-and-delete,
// shared by every lock on the store.
type Release struct {
	command  atomic.Int32 // a Command
	asking   atomic.Bool  // one question at a time; the others use the script
	askAfter atomic.Int64 // when to ask again, in Unix nanoseconds
}

// releases maps a store (go-zero's *redis.Redis, or a go-redis
// client) to its *Release.
var releases sync.Map

// For returns the memory of store's compare-and-delete, or nil
// for a store that cannot send the command: only go-zero's store and a
// processor (a go-redis client) can, and only one that is a pointer is
// remembered, since the memory is kept by identity.
func For(c *conn.Conn) *Release {
	var id any
	switch {
	case c.IsGoZero():
		if c.GoZero.R == nil {
			return nil
		}
		id = c.GoZero.R
	case c.Proc != nil:
		if reflect.TypeOf(c.Store).Kind() != reflect.Pointer {
			return nil
		}
		id = c.Store
	default:
		return nil
	}
	if n, ok := releases.Load(id); ok {
		return n.(*Release)
	}
	n, _ := releases.LoadOrStore(id, new(Release))
	return n.(*Release)
}

// Current is the command to release with now: the one known, or the
// script while none is, asking the server first when the question is due
// and no other release is asking it.
func (n *Release) Current(ctx context.Context, cn *conn.Conn) Command {
	c := Command(n.command.Load())
	if c == DelIfEq || c == DelEx {
		return c
	}
	if time.Now().UnixNano() < n.askAfter.Load() || !n.asking.CompareAndSwap(false, true) {
		return ByScript
	}
	defer n.asking.Store(false)
	c, err := askNative(ctx, cn)
	if err != nil {
		n.askAfter.Store(time.Now().Add(retry).UnixNano())
		return ByScript
	}
	n.command.Store(int32(c))
	if c == ByScript {
		n.askAfter.Store(time.Now().Add(recheck).UnixNano())
	}
	return c
}

// Refused marks the store as having no command after the server refused
// c, until it is asked again.
func (n *Release) Refused(c Command) {
	if n.command.CompareAndSwap(int32(c), int32(ByScript)) {
		n.askAfter.Store(time.Now().Add(recheck).UnixNano())
	}
}

// askNative asks the server which compare-and-delete it has. COMMAND INFO
// answers nil for a command the server does not know. An error reply (a
// proxy without COMMAND, an ACL that forbids it) means no usable command;
// any other error leaves the answer unknown.
func askNative(ctx context.Context, c *conn.Conn) (Command, error) {
	reply, err := c.Send(ctx, false, "command", "info", "delifeq", "delex")
	var replyErr redis.Error
	switch {
	case errors.As(err, &replyErr) && !errors.Is(err, redis.Nil):
		return ByScript, nil
	case err != nil:
		return Unknown, err
	}
	return parseCommandInfo(reply)
}

// parseCommandInfo reads COMMAND INFO DELIFEQ DELEX.
func parseCommandInfo(reply any) (Command, error) {
	infos, ok := reply.([]any)
	if !ok || len(infos) != 2 {
		return Unknown, fmt.Errorf("%w: COMMAND INFO answered %v", errs.UnexpectedReply, reply)
	}
	switch {
	case infos[0] != nil:
		return DelIfEq, nil
	case infos[1] != nil:
		return DelEx, nil
	}
	return ByScript, nil
}

// Send sends the compare-and-delete c of key and token and returns the
// reply.
func Send(ctx context.Context, cn *conn.Conn, c Command, key string, token any) (any, error) {
	if c == DelEx {
		return cn.Send(ctx, true, "delex", key, "ifeq", token)
	}
	return cn.Send(ctx, true, "delifeq", key, token)
}

// RefusedCommand reports a server's refusal to run a command at all: it
// does not know it (an older server), or the ACL forbids it. Nothing ran.
func RefusedCommand(err error) bool {
	var reply redis.Error
	if err == nil || !errors.As(err, &reply) || errors.Is(err, redis.Nil) {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.HasPrefix(msg, "noperm") || strings.Contains(msg, "unknown command")
}

// Known is the command the store is known to release with now, for the
// tests: Unknown until it was asked.
func (n *Release) Known() Command { return Command(n.command.Load()) }

// AskAgain makes the next release ask the server again, as it does once
// recheck has passed, for the tests.
func (n *Release) AskAgain() { n.askAfter.Store(0) }
