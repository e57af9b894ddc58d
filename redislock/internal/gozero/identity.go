package gozero

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"golang.org/x/sync/singleflight"

	"github.com/zerolock/zerolock/redislock/internal/errs"
)

// go-zero's store sends CLIENT SETINFO on every new connection unless its
// RedisConf says DisableIdentity. Servers before Redis 7.2 (Debian 12 and
// Ubuntu ship 7.0 and 6.x), miniredis, some proxies and ACL users without
// the CLIENT command reject it, and go-zero's circuit breaker counts every
// rejection as a failure: a burst of new connections opens the breaker and
// lock calls fail with "service unavailable" while Redis is healthy. A
// store in that state is refused with ErrIdentityRejected.
//
// Whether the server rejects the command is asked once per address, by
// sending the same command go-redis sends. go-zero shares one client per
// address (and type) among all its stores, made from the first store that
// connects, so the verdict is the server's, and a store is refused when the
// server rejects the command and the store has identity on.

// serverVerdict is what a server said of CLIENT SETINFO.
type serverVerdict int32

const (
	verdictUnknown serverVerdict = iota // not asked yet, or no clear answer
	verdictAccepts
	verdictRejects
)

// identityCheck is one address's verdict, shared by every store on it.
type identityCheck struct {
	verdict atomic.Int32 // a serverVerdict
	reply   string       // the rejection, once verdict is verdictRejects
	probe   singleflight.Group
}

var identityChecks sync.Map // "type addr" -> *identityCheck

var errNilStore = errs.Misconfigured("redislock: nil go-zero store")

func identityFor(store *zredis.Redis) *identityCheck {
	if store == nil {
		return new(identityCheck) // check refuses it
	}
	key := store.Type + " " + store.Addr
	if c, ok := identityChecks.Load(key); ok {
		return c.(*identityCheck)
	}
	c, _ := identityChecks.LoadOrStore(key, new(identityCheck))
	return c.(*identityCheck)
}

// CheckStore tells whether go-zero's store can take locks without
// tripping its own circuit breaker. It returns an error wrapping
// ErrIdentityRejected (errs.IdentityRejected), which names the fix, when the store sends CLIENT
// SETINFO on new connections and the server rejects that command; nil
// when the store has DisableIdentity set or the server accepts the
// command. The server's answer is asked once per address and remembered;
// until the server gave a clear one, CheckStore returns the error
// that kept it from answering (a refused connection, a wrong password, a
// context that ended) and asks again on the next call.
//
// go-zero shares one client among all its stores of an address, set up by
// whichever connects first: on a server that rejects CLIENT SETINFO, every
// RedisConf of that address in the process needs DisableIdentity.
//
// NewRedisLock's locks, the middleware and the interceptor run this check
// themselves: the middleware and the interceptor at start-up (NewBackend's
// Check), a lock before its first command on a store that has not been
// checked yet.
func CheckStore(ctx context.Context, store *zredis.Redis) error {
	return identityFor(store).check(ctx, store)
}

// check answers from the server's verdict, asking for it while there is
// none; one probe per address is in flight, and a caller whose ctx ends
// stops waiting for it.
func (c *identityCheck) check(ctx context.Context, store *zredis.Redis) error {
	if store == nil {
		return errNilStore
	}
	if identityOff(store) {
		return nil
	}
	v := serverVerdict(c.verdict.Load())
	if v == verdictUnknown {
		ch := c.probe.DoChan("", func() (any, error) {
			return nil, c.ask(ctx, store)
		})
		select {
		case res := <-ch:
			if res.Err != nil {
				return fmt.Errorf("redislock: check the go-zero store at %s: %w", store.Addr, res.Err)
			}
		case <-ctx.Done():
			return fmt.Errorf("redislock: check the go-zero store at %s: %w", store.Addr, ctx.Err())
		}
		v = serverVerdict(c.verdict.Load())
	}
	if v == verdictAccepts {
		return nil
	}
	if _, known := identityDisabled(store); !known {
		// go-zero moved the setting: the store may well have it set, so
		// this cannot be called a misconfiguration.
		return nil
	}
	return fmt.Errorf("%w: the server at %s answered %q; go-zero sends that command on every new connection "+
		"and its circuit breaker counts each rejection as a failure, so a burst of new connections opens the "+
		"breaker and lock calls fail while Redis is healthy. Fix: set DisableIdentity: true in the store's "+
		"RedisConf, and in every other RedisConf of that address in the process, since go-zero shares one "+
		"client per address (or pass redis.WithIdentity(), which disables it, to redis.New)",
		errs.IdentityRejected, store.Addr, c.reply)
}

// ask sends the value go-redis itself sets on every new connection, so an
// accepting server is left as it was, and records a clear answer. Only a
// reply that says the command is unknown or not permitted is a rejection;
// any other error (a wrong password, a busy server) leaves no verdict.
func (c *identityCheck) ask(ctx context.Context, store *zredis.Redis) error {
	_, err := store.DoCtx(ctx, "client", "setinfo", "lib-ver", redis.Version())
	switch {
	case err == nil:
		c.verdict.Store(int32(verdictAccepts))
		return nil
	case rejectsCommand(err):
		c.reply = err.Error()
		c.verdict.Store(int32(verdictRejects))
		return nil
	}
	return err
}

// rejectsCommand tells a server's refusal of CLIENT SETINFO itself from
// other failures: Redis before 7.2 answers "ERR unknown subcommand", a
// proxy "ERR unknown command", an ACL user without it "NOPERM".
func rejectsCommand(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) || errors.Is(err, redis.Nil) {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.HasPrefix(msg, "noperm") ||
		strings.Contains(msg, "unknown subcommand") || strings.Contains(msg, "unknown command")
}

// identityOffByStore caches identityDisabled per store, which
// New asks of every store it wraps.
var identityOffByStore sync.Map // *zredis.Redis -> bool

// identityOff reports whether store is known to send no CLIENT SETINFO.
func identityOff(store *zredis.Redis) bool {
	if store == nil {
		return false
	}
	if off, ok := identityOffByStore.Load(store); ok {
		return off.(bool)
	}
	disabled, known := identityDisabled(store)
	identityOffByStore.Store(store, known && disabled)
	return known && disabled
}

// identityDisabled reads go-zero's unexported identity flag, which holds
// RedisConf.DisableIdentity (redis.WithIdentity sets it). known is false
// if a go-zero version no longer has it; TestIdentityFieldKnown pins it.
func identityDisabled(store *zredis.Redis) (disabled, known bool) {
	f := reflect.ValueOf(store).Elem().FieldByName("identity")
	if !f.IsValid() || f.Kind() != reflect.Bool {
		return false, false
	}
	return f.Bool(), true
}
