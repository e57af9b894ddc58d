package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"sync"
	"sync/atomic"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/search"
	"github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"
	"github.com/zeromicro/go-zero/rest/pathvar"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/guard"
	"github.com/zerolock/zerolock/redislock"
)

// LockMiddleware refuses duplicate submissions on the routes its rules
// name. Its Handle method is a rest.Middleware.
type LockMiddleware struct {
	conf      LockConf
	guard     *guard.Guard
	trees     map[string]*search.Tree // method -> route pattern -> *rule
	unchecked sync.Once               // warnIfUnchecked, at the first request
	checked   atomic.Bool             // CheckRoutes passed

	refusals      atomic.Pointer[func(context.Context, *Error) (int, any)] // SetRefusalHandler's
	refusalWarned atomic.Bool                                              // a bad refusal handler was logged
}

var metrics = guard.NewMetrics("http", "route")

// NewLockMiddleware validates c and returns a middleware that locks in
// store. Every problem in c (an unknown key source, a malformed spec, a
// path key that names no variable of the route, an unknown mode, a
// non-4xx RejectCode on the conf or a rule, two rules for one route, a
// malformed Fingerprint spec, Fence in replay, limit or rate mode, limit
// mode without Permits or Permits in another mode, rate mode without a
// Quota of at least 1 and a Period of at least 1ms, Quota, Period or
// RateLimitHeaders in another mode, RejectCode, Expire, DisableRenew or
// MaxHold on a rate rule) is an error wrapping ErrBadConfig here, at start-up, rather than a 500 later. Zero fields of a LockConf built in
// code take the defaults its conf tags declare.
//
// It also checks the store: one whose server rejects the CLIENT SETINFO
// that go-zero sends on new connections is refused with an error wrapping
// ErrBadConfig and redislock.ErrIdentityRejected that names the fix
// (DisableIdentity: true). A server that cannot be reached now is logged;
// the locks ask it before their first command, and a rejection of CLIENT
// SETINFO found then is logged once, not refused (see
// redislock.GoZeroStore).
func NewLockMiddleware(c LockConf, store *redis.Redis) (*LockMiddleware, error) {
	return NewLockMiddlewareWithBackend(c, redislock.NewBackend(redislock.GoZeroStore(store), redislock.WithoutWakeups()))
}

// MustNewLockMiddleware is NewLockMiddleware that exits through logx.Must
// on a bad configuration, as go-zero's MustNew functions do.
func MustNewLockMiddleware(c LockConf, store *redis.Redis) *LockMiddleware {
	m, err := NewLockMiddleware(c, store)
	logx.Must(err)
	return m
}

// NewLockMiddlewareWithBackend is NewLockMiddleware for any lock backend:
// a go-redis client's (redislock.NewBackend(rdb, redislock.WithoutWakeups()):
// the middleware's locks are only ever tried, never waited for, so their
// releases need not wake waiters), redislock.NewRedLockBackend over
// independent masters, or a lock on another service. Renewal (unless
// DisableRenew) and Fence are refused when its locks cannot renew or
// fence, replay mode when they cannot store a result in place of the lock
// (zerolock.Recorder: Redlock, etcd and ZooKeeper locks cannot), and limit
// mode when the backend makes no semaphores (zerolock.SemaphoreBackend:
// only a Redis store backend does), and rate mode when it cannot count
// requests against a rate (zerolock.RateBackend: only a Redis store
// backend can), all with errors wrapping ErrBadConfig.
// A backend that is a zerolock.Checker is asked last whether it is set up
// to work: its misconfiguration is refused with an error wrapping
// ErrBadConfig and zerolock.ErrMisconfigured.
func NewLockMiddlewareWithBackend(c LockConf, backend zerolock.Backend) (*LockMiddleware, error) {
	c = withDefaults(c)
	if err := validateConf(c); err != nil {
		return nil, err
	}
	m := &LockMiddleware{
		conf: c,
		guard: &guard.Guard{Backend: backend, FailOpen: c.FailOpen, Fence: c.Fence, Metrics: metrics,
			RecordKind: kindHTTP, MaxRecord: maxStoredPayload, CallerKeys: callerKeys},
		trees: make(map[string]*search.Tree),
	}
	if err := m.guard.Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	for _, r := range c.Rules {
		ru, err := m.compile(r)
		if err != nil {
			return nil, err
		}
		tree, ok := m.trees[ru.method]
		if !ok {
			tree = search.NewTree()
			m.trees[ru.method] = tree
		}
		if err := tree.Add(ru.path, ru); err != nil {
			return nil, fmt.Errorf("%w: rule %s: %v", ErrBadConfig, ru.Label, err)
		}
	}
	if err := m.guard.CheckBackend(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return m, nil
}

// compile validates a rule against m's configuration and backend.
func (m *LockMiddleware) compile(r LockRule) (*rule, error) {
	ru, err := compileRule(m.conf, m.guard, r)
	if err != nil {
		return nil, err
	}
	warnIfShared(ru)
	return ru, nil
}

// ForRule returns a middleware for one route, built in code rather than
// from c.Rules, for use with rest.WithMiddlewares. r's Method and Path must
// be the route's; its Expire, Mode, Retain, MaxResponseBytes, RejectCode
// and Message default to m's configuration, and m's refusal handler (see
// SetRefusalHandler) answers its refusals. The error wraps ErrBadConfig.
func (m *LockMiddleware) ForRule(r LockRule) (rest.Middleware, error) {
	ru, err := m.compile(r)
	if err != nil {
		return nil, err
	}
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
		m.unchecked.Do(m.warnIfUnchecked)
		ru := m.match(r)
		if ru == nil {
			next(w, r)
			return
		}
		m.serve(ru, next, w, r)
	}
}

// match finds the rule for r the way go-zero's router finds a route: by
// method, then by pattern against the cleaned path. Installed with Use, the
// middleware runs after the router matched, so the router's path variables
// are in the request: a rule pattern that binds other variables than the
// router did (the rule /orders/:id against the route /orders/batch) is not
// the route that is serving r, and r passes through.
func (m *LockMiddleware) match(r *http.Request) *rule {
	tree, ok := m.trees[r.Method]
	if !ok {
		return nil
	}
	result, ok := tree.Search(path.Clean(r.URL.Path))
	if !ok || !sameVars(result.Params, pathvar.Vars(r)) {
		return nil
	}
	return result.Item.(*rule)
}

func sameVars(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func (m *LockMiddleware) serve(ru *rule, next http.HandlerFunc, w http.ResponseWriter, r *http.Request) {
	var (
		key string
		fp  guard.Fingerprint
	)
	req, rejection := readRequest(ru, r, m.conf.MaxBodyBytes)
	if rejection == nil {
		key, rejection = req.key(ru)
	}
	if rejection == nil && ru.Policy.Replay {
		fp, rejection = req.fingerprint(ru)
	}
	if rejection != nil {
		m.guard.Count(ru.Label, guard.BadRequest)
		m.respond(w, r, rejection)
		return
	}
	m.guard.Serve(r.Context(), ru.Rule, key, fp, &exchange{m: m, ru: ru, next: next, w: w, r: r})
}

// windowFailed tells whether a handler that returned with status, its
// request's context then in state ended (nil: still live), failed in a way
// that must free a window at once, so that the user's retry is not refused:
// a 5xx; go-zero's timeout answering before the handler returned (the
// deadline passed first, whatever the handler wrote later); or a client
// that left and a handler that then answered an error, having seen the
// cancellation (its database call failed, say). A handler that answered
// 2xx or 3xx to a client that left completed: the operation happened, and
// the retry is the repeat a window exists to refuse.
func windowFailed(ended error, status int) bool {
	switch {
	case status >= http.StatusInternalServerError:
		return true
	case errors.Is(ended, context.DeadlineExceeded):
		return true
	case errors.Is(ended, context.Canceled):
		return status >= http.StatusBadRequest
	}
	return false
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
	if c.Retain == 0 {
		c.Retain = DefaultRetain
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return c
}

func validateConf(c LockConf) error {
	if err := checkRejectCode(c.RejectCode); err != "" {
		return fmt.Errorf("%w: %s", ErrBadConfig, err)
	}
	switch {
	case c.MaxBodyBytes <= 0:
		return fmt.Errorf("%w: MaxBodyBytes %d must be positive", ErrBadConfig, c.MaxBodyBytes)
	case c.MaxResponseBytes <= 0:
		return fmt.Errorf("%w: MaxResponseBytes %d must be positive", ErrBadConfig, c.MaxResponseBytes)
	case c.Retain < 0:
		return fmt.Errorf("%w: Retain %v must not be negative", ErrBadConfig, c.Retain)
	case c.TrustedProxyHops < 0:
		return fmt.Errorf("%w: TrustedProxyHops %d must not be negative", ErrBadConfig, c.TrustedProxyHops)
	}
	return nil
}

// warnIfShared logs a rule whose key has no per-user or per-client part,
// unless its keys are shared on purpose (SharedKeys): it makes one user's
// request block everybody's. (An ip key counts, but it is only as
// trustworthy as X-Forwarded-For: see the package doc.)
func warnIfShared(ru *rule) {
	if ru.perClient || ru.Shared {
		return
	}
	if ru.Policy.Quota > 0 {
		logx.Errorf("zerolock: warning: rate rule %s has no claim:, header: or ip key, "+
			"so all users share one rate and one user's requests use up everybody's; add the user's identity "+
			"(claim:userId) or address (ip), or set SharedKeys: true if the route's rate is meant for all at once", ru.Label)
		return
	}
	logx.Errorf("zerolock: warning: lock rule %s has no claim:, header: or ip key, "+
		"so requests from different users block each other; add the user's identity (claim:userId), "+
		"or set SharedKeys: true if its keys are shared by different users on purpose", ru.Label)
}
