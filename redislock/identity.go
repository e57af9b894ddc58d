package redislock

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
)

// go-zero's store sends CLIENT SETINFO on every new connection unless its
// RedisConf says DisableIdentity. Servers before Redis 7.2 (Debian 12 and
// Ubuntu ship 7.0 and 6.x), miniredis, some proxies and ACL users without
// the CLIENT command reject it, and go-zero's circuit breaker counts every
// rejection as a failure: a burst of new connections opens the breaker and
// lock calls fail with "service unavailable" while Redis is healthy. A
// store in that state is refused with ErrIdentityRejected, decided once per
// store by sending the same command go-redis sends.

// identity states of a store: unknown until a probe got an answer.
const (
	identityUnknown int32 = iota
	identityOK
	identityRejected
)

// identityCheck is one store's verdict, shared by every lock on it.
type identityCheck struct {
	state atomic.Int32
	mu    sync.Mutex // one probe at a time
	err   error      // the refusal, once state is identityRejected
}

var errNilStore = errors.New("redislock: nil go-zero store")

var identityChecks sync.Map // *zredis.Redis -> *identityCheck

func identityFor(store *zredis.Redis) *identityCheck {
	if c, ok := identityChecks.Load(store); ok {
		return c.(*identityCheck)
	}
	c, _ := identityChecks.LoadOrStore(store, new(identityCheck))
	return c.(*identityCheck)
}

// CheckGoZeroStore tells whether go-zero's store can take locks without
// tripping its own circuit breaker. It returns an error wrapping
// ErrIdentityRejected, which names the fix, when the store sends CLIENT
// SETINFO on new connections and the server rejects that command; nil
// when the store has DisableIdentity set or the server accepts the
// command. The answer is decided once per store and remembered; until the
// server could be asked, it returns the store's error (such as a refused
// connection) and asks again on the next call.
//
// NewRedisLock's locks, the middleware and the interceptor run this check
// themselves: the middleware and the interceptor at start-up, a lock
// before its first command on a store that has not been checked yet.
func CheckGoZeroStore(ctx context.Context, store *zredis.Redis) error {
	if store == nil {
		return errNilStore
	}
	return identityFor(store).check(ctx, store)
}

// check answers from the verdict, probing while there is none.
func (c *identityCheck) check(ctx context.Context, store *zredis.Redis) error {
	switch c.state.Load() {
	case identityOK:
		return nil
	case identityRejected:
		return c.err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state.Load() { // decided while this call waited
	case identityOK:
		return nil
	case identityRejected:
		return c.err
	}
	if disabled, known := identityDisabled(store); known && disabled {
		c.state.Store(identityOK)
		return nil
	}
	// The value go-redis itself sets on every new connection, so an
	// accepting server is left as it was.
	_, err := store.DoCtx(ctx, "client", "setinfo", "lib-ver", redis.Version())
	var replyErr redis.Error
	switch {
	case err == nil:
		c.state.Store(identityOK)
		return nil
	case !errors.As(err, &replyErr) || errors.Is(err, redis.Nil):
		return fmt.Errorf("redislock: check the go-zero store at %s: %w", store.Addr, err)
	}
	if _, known := identityDisabled(store); !known {
		// go-zero moved the setting: the store may well have it set, so
		// this cannot be called a misconfiguration.
		c.state.Store(identityOK)
		return nil
	}
	c.err = fmt.Errorf("%w: the server at %s answered %q; go-zero sends that command on every new connection "+
		"and its circuit breaker counts each rejection as a failure, so a burst of new connections opens the "+
		"breaker and lock calls fail while Redis is healthy. Fix: set DisableIdentity: true in the store's "+
		"RedisConf (or pass redis.WithIdentity(), which disables it, to redis.New)",
		ErrIdentityRejected, store.Addr, err.Error())
	c.state.Store(identityRejected)
	return c.err
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
