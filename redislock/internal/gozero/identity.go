package gozero

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
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"golang.org/x/sync/singleflight"

	"github.com/zerolock/zerolock/redislock/internal/errs"
)

// go-zero's store sends CLIENT SETINFO on every new connection unless its
// RedisConf says DisableIdentity. Servers before Redis 7.2 (Debian 12 and
// Ubuntu ship 7.0 and 6.x), miniredis, some proxies and ACL users without
// the CLIENT command reject it, and go-zero's circuit breaker counts every
// rejection as a failure: a burst of new connections can open the breaker
// and make calls fail with "service unavailable" while Redis is healthy.
//
// Whether the server rejects the command is asked once per address, by
// sending the same command go-redis sends. go-zero shares one client per
// address (and type) among all its stores, made from the first store that
// connects, so the verdict is the server's, and a store is at risk when
// the server rejects the command and the store has identity on.
//
// What is done with an at-risk store depends on who asks. The start-up
// check (CheckStore, NewBackend's Check, which the middleware and the
// interceptor run) refuses it with ErrIdentityRejected, naming the fix. A
// lock's commands (Store.Ready, ready.go) do not: go-zero's own RedisLock
// works on such a store, and so must the drop-in, so the lock logs the
// hazard once per address, with the same fix, and goes on.

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
	// retryAt (Unix nanoseconds) is when a lock may ask again after a
	// probe that got no verdict (see Store.Ready); the start-up check
	// does not wait for it.
	retryAt atomic.Int64
	warned  atomic.Bool // a lock logged the rejection
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
// ErrIdentityRejected (errs.IdentityRejected, also a
// zerolock.ErrMisconfigured), which names the fix, when the store sends
// CLIENT SETINFO on new connections and the server rejects that command;
// nil when the store has DisableIdentity set or the server accepts the
// command. The server's answer is asked once per address and remembered;
// until the server gave a clear one, CheckStore returns the error that
// kept it from answering (a refused connection, a wrong password, a
// context that ended) and asks again on the next call.
//
// go-zero shares one client among all its stores of an address, set up by
// whichever connects first: on a server that rejects CLIENT SETINFO, every
// RedisConf of that address in the process needs DisableIdentity.
//
// The middleware and the interceptor run this check at start-up
// (NewBackend's Check) and refuse such a store. A lock does not: its
// commands ask for the same verdict and, on a rejection, log the hazard
// once per address and work on (Store.Ready).
func CheckStore(ctx context.Context, store *zredis.Redis) error {
	return identityFor(store).check(ctx, store)
}

// check answers from the server's verdict, asking for it while there is
// none.
func (c *identityCheck) check(ctx context.Context, store *zredis.Redis) error {
	if store == nil {
		return errNilStore
	}
	if identityOff(store) {
		return nil
	}
	v, err := c.verdictOf(ctx, store)
	if err != nil {
		return fmt.Errorf("redislock: check the go-zero store at %s: %w", store.Addr, err)
	}
	if v == verdictAccepts || !identityKnownOn(store) {
		return nil
	}
	return fmt.Errorf("%w: %s", errs.IdentityRejected, c.hazard(store.Addr))
}

// verdictOf returns the server's verdict, asking for it while there is
// none: one probe per address is in flight, and a caller whose ctx ends
// stops waiting for it. The error is what kept the server from answering.
func (c *identityCheck) verdictOf(ctx context.Context, store *zredis.Redis) (serverVerdict, error) {
	if v := serverVerdict(c.verdict.Load()); v != verdictUnknown {
		return v, nil
	}
	ch := c.probe.DoChan("", func() (any, error) {
		return nil, c.ask(ctx, store)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return verdictUnknown, res.Err
		}
	case <-ctx.Done():
		return verdictUnknown, ctx.Err()
	}
	return serverVerdict(c.verdict.Load()), nil
}

// hazard says what the server answered, what it costs a store with
// identity on, and the fix: the start-up check's error and the lock's log
// line both carry it.
func (c *identityCheck) hazard(addr string) string {
	return fmt.Sprintf("the server at %s answered %q; go-zero sends that command on every new connection "+
		"and its circuit breaker counts each rejection as a failure, so a burst of new connections opens the "+
		"breaker and lock calls fail while Redis is healthy. Fix: set DisableIdentity: true in the store's "+
		"RedisConf, and in every other RedisConf of that address in the process, since go-zero shares one "+
		"client per address (or pass redis.WithIdentity(), which disables it, to redis.New)",
		addr, c.reply)
}

// ask sends the value go-redis itself sets on every new connection, so an
// accepting server is left as it was, and records a clear answer. Only a
// reply that says the command is unknown or not permitted is a rejection;
// any other error (a wrong password, a busy server) leaves no verdict, and
// unless it was the asking caller's context that ended, locks wait
// reprobeAfter before they ask again.
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
	if ctx.Err() == nil {
		c.retryAt.Store(time.Now().Add(reprobeAfter).UnixNano())
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

// identityKnownOn reports whether store is known to send CLIENT SETINFO:
// if go-zero moved its setting, the store may well have it off, and a
// rejection cannot be called a misconfiguration.
func identityKnownOn(store *zredis.Redis) bool {
	disabled, known := identityDisabled(store)
	return known && !disabled
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
