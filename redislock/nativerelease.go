package redislock

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
// asked again after nativeRecheck, so a server upgraded in place, or a
// failover back, is noticed.

// releaseCommand is how a store's server deletes a key only while it holds
// a value.
type releaseCommand int32

const (
	releaseUnknown  releaseCommand = iota // not asked yet, or no clear answer
	releaseByScript                       // no such command: release.lua
	releaseDelIfEq                        // Valkey 9: DELIFEQ key value
	releaseDelEx                          // Redis 8.4: DELEX key IFEQ value
)

const (
	// nativeRecheck is how long a store found without the command goes
	// before it is asked again.
	nativeRecheck = time.Minute
	// nativeRetry is how long a store goes before it is asked again when
	// the question got no clear answer (the server down, a timeout).
	nativeRetry = time.Second
)

// nativeRelease is one store's memory of its server's compare-and-delete,
// shared by every lock on the store.
type nativeRelease struct {
	command  atomic.Int32 // a releaseCommand
	asking   atomic.Bool  // one question at a time; the others use the script
	askAfter atomic.Int64 // when to ask again, in Unix nanoseconds
}

// nativeReleases maps a store (go-zero's *redis.Redis, or a go-redis
// client) to its *nativeRelease.
var nativeReleases sync.Map

// nativeReleaseFor returns the memory of store's compare-and-delete, or nil
// for a store that cannot send the command: only go-zero's store and a
// processor (a go-redis client) can, and only one that is a pointer is
// remembered, since the memory is kept by identity.
func nativeReleaseFor(store Store) *nativeRelease {
	var id any
	switch s := store.(type) {
	case goZeroStore:
		if s.r == nil {
			return nil
		}
		id = s.r
	case processor:
		if reflect.TypeOf(store).Kind() != reflect.Pointer {
			return nil
		}
		id = store
	default:
		return nil
	}
	if n, ok := nativeReleases.Load(id); ok {
		return n.(*nativeRelease)
	}
	n, _ := nativeReleases.LoadOrStore(id, new(nativeRelease))
	return n.(*nativeRelease)
}

// sendRelease sends the lock's release: the server's compare-and-delete
// when the lock announces nothing and the server has one, else
// release.lua. Either is sent once on a go-redis client (see onceCmd).
func (rl *RedisLock) sendRelease(ctx context.Context) *redis.Cmd {
	if rl.native != nil {
		if c := rl.native.current(ctx, rl.store, rl.proc); c != releaseByScript {
			cmd := sendNative(ctx, rl.store, rl.proc, c, rl.key, rl.tokenArg)
			if redis.HasErrorPrefix(cmd.Err(), "WRONGTYPE") {
				// The key holds another type: not ours, as release.lua
				// answers (go-zero's breaker has counted the error reply).
				cmd.SetErr(nil)
				cmd.SetVal(int64(0))
				return cmd
			}
			if !refusedCommand(cmd.Err()) {
				return cmd
			}
			rl.native.refused(c) // nothing was deleted: the script does it
		}
	}
	return releaseScript.runOnce(ctx, rl.store, rl.proc, rl.releaseKeys, rl.releaseArgs...)
}

// current is the command to release with now: the one known, or the
// script while none is, asking the server first when the question is due
// and no other release is asking it.
func (n *nativeRelease) current(ctx context.Context, store Store, proc processor) releaseCommand {
	c := releaseCommand(n.command.Load())
	if c == releaseDelIfEq || c == releaseDelEx {
		return c
	}
	if time.Now().UnixNano() < n.askAfter.Load() || !n.asking.CompareAndSwap(false, true) {
		return releaseByScript
	}
	defer n.asking.Store(false)
	c, err := askNative(ctx, store, proc)
	if err != nil {
		n.askAfter.Store(time.Now().Add(nativeRetry).UnixNano())
		return releaseByScript
	}
	n.command.Store(int32(c))
	if c == releaseByScript {
		n.askAfter.Store(time.Now().Add(nativeRecheck).UnixNano())
	}
	return c
}

// refused marks the store as having no command after the server refused
// c, until it is asked again.
func (n *nativeRelease) refused(c releaseCommand) {
	if n.command.CompareAndSwap(int32(c), int32(releaseByScript)) {
		n.askAfter.Store(time.Now().Add(nativeRecheck).UnixNano())
	}
}

// askNative asks the server which compare-and-delete it has. COMMAND INFO
// answers nil for a command the server does not know. An error reply (a
// proxy without COMMAND, an ACL that forbids it) means no usable command;
// any other error leaves the answer unknown.
func askNative(ctx context.Context, store Store, proc processor) (releaseCommand, error) {
	reply, err := sendCommand(ctx, store, proc, false, "command", "info", "delifeq", "delex")
	var replyErr redis.Error
	switch {
	case errors.As(err, &replyErr) && !errors.Is(err, redis.Nil):
		return releaseByScript, nil
	case err != nil:
		return releaseUnknown, err
	}
	return parseCommandInfo(reply)
}

// parseCommandInfo reads COMMAND INFO DELIFEQ DELEX.
func parseCommandInfo(reply any) (releaseCommand, error) {
	infos, ok := reply.([]any)
	if !ok || len(infos) != 2 {
		return releaseUnknown, fmt.Errorf("%w: COMMAND INFO answered %v", ErrUnexpectedReply, reply)
	}
	switch {
	case infos[0] != nil:
		return releaseDelIfEq, nil
	case infos[1] != nil:
		return releaseDelEx, nil
	}
	return releaseByScript, nil
}

// sendNative sends the compare-and-delete c of key and token.
func sendNative(ctx context.Context, store Store, proc processor, c releaseCommand, key string, token any) *redis.Cmd {
	var (
		reply any
		err   error
	)
	if c == releaseDelEx {
		reply, err = sendCommand(ctx, store, proc, true, "delex", key, "ifeq", token)
	} else {
		reply, err = sendCommand(ctx, store, proc, true, "delifeq", key, token)
	}
	cmd := redis.NewCmd(ctx)
	if err != nil {
		cmd.SetErr(err)
	} else {
		cmd.SetVal(reply)
	}
	return cmd
}

// sendCommand sends a command through go-zero's store (so its breaker,
// metrics and tracing see it) or a go-redis client; keyed says the
// command's first argument is its key (for cluster routing), and such a
// command is sent once on a go-redis client. Other stores cannot send it.
func sendCommand(ctx context.Context, store Store, proc processor, keyed bool, args ...any) (any, error) {
	if s, ok := store.(goZeroStore); ok {
		if err := s.ready(ctx); err != nil {
			return nil, err
		}
		return s.r.DoCtx(ctx, args...)
	}
	if proc == nil {
		return nil, errors.New("redislock: the store cannot send commands")
	}
	cmd := redis.NewCmd(ctx, args...)
	var err error
	if keyed {
		cmd.SetFirstKeyPos(1)
		err = proc.Process(ctx, onceCmd{cmd})
	} else {
		err = proc.Process(ctx, cmd)
	}
	if err != nil {
		return nil, err
	}
	return cmd.Val(), nil
}

// refusedCommand reports a server's refusal to run a command at all: it
// does not know it (an older server), or the ACL forbids it. Nothing ran.
func refusedCommand(err error) bool {
	var reply redis.Error
	if err == nil || !errors.As(err, &reply) || errors.Is(err, redis.Nil) {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.HasPrefix(msg, "noperm") || strings.Contains(msg, "unknown command")
}
