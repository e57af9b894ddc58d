package middleware

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"path"
	"strconv"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/search"
	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/internal/keyspec"
	"github.com/zerolock/zerolock/redislock"
)

// LockMiddleware refuses duplicate submissions on the routes its rules
// name. Its Handle method is a rest.Middleware.
type LockMiddleware struct {
	conf  LockConf
	store redislock.Store
	trees map[string]*search.Tree // method -> route pattern -> *rule
}

// NewLockMiddleware validates c and returns a middleware that locks in
// store. Every problem in c (an unknown key source, a malformed spec, a
// path key that names no variable of the route, an unknown mode, a
// non-4xx RejectCode, two rules for one route) is an error wrapping
// ErrBadConfig here, at start-up, rather than a 500 later. Zero fields of
// a LockConf built in code take the defaults its conf tags declare.
func NewLockMiddleware(c LockConf, store *redis.Redis) (*LockMiddleware, error) {
	return NewLockMiddlewareWithStore(c, redislock.GoZeroStore(store))
}

// MustNewLockMiddleware is NewLockMiddleware that exits through logx.Must
// on a bad configuration, as go-zero's MustNew functions do.
func MustNewLockMiddleware(c LockConf, store *redis.Redis) *LockMiddleware {
	m, err := NewLockMiddleware(c, store)
	logx.Must(err)
	return m
}

// NewLockMiddlewareWithStore is NewLockMiddleware for any redislock.Store,
// such as a go-redis client.
func NewLockMiddlewareWithStore(c LockConf, store redislock.Store) (*LockMiddleware, error) {
	c = withDefaults(c)
	if err := validateConf(c); err != nil {
		return nil, err
	}
	m := &LockMiddleware{conf: c, store: store, trees: make(map[string]*search.Tree)}
	for _, r := range c.Rules {
		ru, err := compileRule(c, r)
		if err != nil {
			return nil, err
		}
		tree, ok := m.trees[ru.method]
		if !ok {
			tree = search.NewTree()
			m.trees[ru.method] = tree
		}
		if err := tree.Add(ru.path, ru); err != nil {
			return nil, fmt.Errorf("%w: rule %s: %v", ErrBadConfig, ru.label, err)
		}
		warnIfShared(ru)
	}
	return m, nil
}

// ForRule returns a middleware for one route, built in code rather than
// from c.Rules, for use with rest.WithMiddlewares. r's Method and Path must
// be the route's; its Expire and Mode default to m's configuration. The
// error wraps ErrBadConfig.
func (m *LockMiddleware) ForRule(r LockRule) (rest.Middleware, error) {
	ru, err := compileRule(m.conf, r)
	if err != nil {
		return nil, err
	}
	warnIfShared(ru)
	return func(next http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, req *http.Request) {
			m.serve(ru, next, w, req)
		}
	}, nil
}

// Handle is the rest.Middleware: a request that matches a rule is locked,
// any other passes straight through.
func (m *LockMiddleware) Handle(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ru := m.match(r)
		if ru == nil {
			next(w, r)
			return
		}
		m.serve(ru, next, w, r)
	}
}

// match finds the rule for r the way go-zero's router finds a route: by
// method, then by pattern against the cleaned path.
func (m *LockMiddleware) match(r *http.Request) *rule {
	tree, ok := m.trees[r.Method]
	if !ok {
		return nil
	}
	result, ok := tree.Search(path.Clean(r.URL.Path))
	if !ok {
		return nil
	}
	return result.Item.(*rule)
}

func (m *LockMiddleware) serve(ru *rule, next http.HandlerFunc, w http.ResponseWriter, r *http.Request) {
	key, rejection := lockKey(m.conf.Prefix, ru, r, m.conf.MaxBodyBytes)
	if rejection != nil {
		requestsTotal.Inc(ru.label, outcomeBadRequest)
		respond(w, r, rejection)
		return
	}

	ctx := r.Context()
	lock := redislock.New(m.store, key, redislock.WithExpiry(ru.expire), redislock.WithTolerance(0))
	ok, err := lock.AcquireCtx(ctx)
	switch {
	case err != nil && m.conf.FailOpen:
		requestsTotal.Inc(ru.label, outcomeFailOpen)
		logx.WithContext(ctx).Errorf("zerolock: lock store failed for %s (key …%s), serving unlocked: %v",
			ru.label, keyspec.Digest(key), err)
		next(w, r)
		return
	case err != nil:
		requestsTotal.Inc(ru.label, outcomeStoreError)
		logx.WithContext(ctx).Errorf("zerolock: lock store failed for %s (key …%s): %v",
			ru.label, keyspec.Digest(key), err)
		respond(w, r, newError(http.StatusServiceUnavailable, "lock_unavailable", ErrLockUnavailable,
			"the request cannot be checked for duplicates right now, try again"))
		return
	case !ok:
		requestsTotal.Inc(ru.label, outcomeRejected)
		respond(w, r, m.duplicate(ctx, lock, ru))
		return
	}

	requestsTotal.Inc(ru.label, outcomeAcquired)
	if ru.window {
		m.serveWindow(ru, lock, next, w, r)
	} else {
		m.serveInflight(ru, lock, next, w, r)
	}
}

// serveInflight releases the lock when the handler returns or panics (the
// panic goes on to go-zero's recover handler).
func (m *LockMiddleware) serveInflight(ru *rule, lock *redislock.RedisLock, next http.HandlerFunc,
	w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	defer func() {
		observeHold(ru, start)
		release(r.Context(), ru, lock)
	}()
	next(w, r)
}

// serveWindow keeps the lock for its whole expiry, unless the handler
// answers 5xx or panics: then it is released at once so a retry can run.
func (m *LockMiddleware) serveWindow(ru *rule, lock *redislock.RedisLock, next http.HandlerFunc,
	w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusRecorder{ResponseWriter: w}
	returned := false
	defer func() {
		observeHold(ru, start)
		if !returned || rec.status >= http.StatusInternalServerError {
			release(r.Context(), ru, lock)
		}
	}()
	next(rec, r)
	returned = true
}

func release(ctx context.Context, ru *rule, lock *redislock.RedisLock) {
	// The request's context may be cancelled by now; the release must still
	// reach Redis, or the lock would linger until it expires.
	if _, err := lock.ReleaseCtx(context.WithoutCancel(ctx)); err != nil {
		logx.WithContext(ctx).Errorf("zerolock: release lock of %s (key …%s): %v",
			ru.label, keyspec.Digest(lock.Key()), err)
	}
}

// duplicate builds the refusal, with the holder's remaining time for
// Retry-After (the full expiry if Redis cannot tell).
func (m *LockMiddleware) duplicate(ctx context.Context, lock *redislock.RedisLock, ru *rule) *Error {
	ttl, err := lock.TTL(ctx)
	if err != nil || ttl <= 0 {
		ttl = ru.expire
	}
	e := newError(m.conf.RejectCode, "duplicate_request", ErrDuplicateRequest,
		"the same request is already being handled, retry later")
	e.RetryAfter = ttl
	return e
}

// respond answers through httpx.ErrorCtx, so a handler set with
// httpx.SetErrorHandlerCtx shapes the body; without one the answer is the
// error's status with a JSON body.
func respond(w http.ResponseWriter, r *http.Request, e *Error) {
	if e.RetryAfter > 0 {
		secs := int64(math.Ceil(e.RetryAfter.Seconds()))
		w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	}
	ctx := r.Context()
	httpx.ErrorCtx(ctx, w, e, func(w http.ResponseWriter, _ error) {
		httpx.WriteJsonCtx(ctx, w, e.Status, errorBody{Code: e.Code, Message: e.Message})
	})
}

// withDefaults fills the zero fields of a LockConf built in code with the
// defaults its conf tags give a loaded one.
func withDefaults(c LockConf) LockConf {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.Expire == 0 {
		c.Expire = DefaultExpire
	}
	if c.Mode == "" {
		c.Mode = ModeInflight
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.RejectCode == 0 {
		c.RejectCode = http.StatusConflict
	}
	return c
}

func validateConf(c LockConf) error {
	switch {
	case c.RejectCode < 400 || c.RejectCode > 499:
		return fmt.Errorf("%w: RejectCode %d must be a 4xx status", ErrBadConfig, c.RejectCode)
	case c.MaxBodyBytes <= 0:
		return fmt.Errorf("%w: MaxBodyBytes %d must be positive", ErrBadConfig, c.MaxBodyBytes)
	}
	return nil
}

// warnIfShared logs a rule whose key has no per-user or per-client part:
// it makes one user's request block everybody's.
func warnIfShared(ru *rule) {
	if !ru.perClient {
		logx.Infof("zerolock: warning: lock rule %s has no claim:, header: or ip key, "+
			"so requests from different users block each other", ru.label)
	}
}
