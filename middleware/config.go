package middleware

import (
	"time"

	"github.com/zerolock/zerolock/internal/guard"
)

// Lock modes.
const (
	// ModeInflight releases the lock when the handler returns, so only
	// concurrent duplicates are refused.
	ModeInflight = guard.ModeInflight
	// ModeWindow keeps the lock until Expire passes (after the acquisition,
	// or, for a handler that ran past a third of Expire and was renewed,
	// after it returned), so repeats that arrive after the first has
	// finished are refused too. A handler that answers
	// 5xx or panics releases it at once, so the user's retry is not blocked
	// by a failure. So does go-zero's timeout answering 503 before the
	// handler returned (the request's deadline passed first), and a client
	// that disconnected when the handler then answered an error (4xx or
	// 5xx: it saw the cancellation and gave up). A handler that answered
	// 2xx or 3xx to a client that left keeps the window: the operation
	// happened, and the retry is the repeat a window exists to refuse.
	ModeWindow = guard.ModeWindow
	// ModeReplay stores the first response for a key in place of its lock,
	// for Retain, and answers every later retry with it (Idempotent-Replayed:
	// true) instead of running the handler again; a retry with another
	// request under the same key is refused with 422. A 5xx, a panic, or a
	// "not done yet" answer (RejectCode, 425, 429) stores nothing and frees
	// the key, so the retry runs again. See the package doc.
	ModeReplay = guard.ModeReplay
	// ModeLimit lets up to Permits requests of one key run at once (two
	// concurrent exports per user, say) and refuses the next with 429 Too
	// Many Requests and Retry-After. Each request holds a permit of a
	// semaphore until its handler returns (or panics, or go-zero's timeout
	// ends it), and a crashed server's permits free themselves after
	// Expire. It needs a Redis store backend. See LockRule.Permits.
	ModeLimit = guard.ModeLimit
	// ModeRate admits up to Quota requests of one key in any Period-long
	// window (five login attempts a minute per address, say) and refuses
	// the next with 429 Too Many Requests, Retry-After and the
	// RateLimit-Policy and RateLimit headers. It takes no lock: each
	// request is counted, on the Redis server's clock, by one script. It
	// needs a Redis store backend. See LockRule.Quota.
	ModeRate = guard.ModeRate
)

// Defaults of LockConf, as its conf tags declare them.
const (
	// DefaultPrefix is the namespace of lock keys.
	DefaultPrefix = "zerolock"
	// DefaultExpire is the lock's lifetime.
	DefaultExpire = 5 * time.Second
	// DefaultMaxBodyBytes bounds the body read for json:, form: and body keys.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultRetain is how long replay mode keeps a completed response.
	DefaultRetain = guard.DefaultRetain
	// DefaultMaxResponseBytes bounds the body replay mode keeps.
	DefaultMaxResponseBytes = 1 << 20
	// MaxQuota is the largest Quota a rate rule takes: a rate key keeps
	// one entry per admission of its Period, and a larger burst leaving
	// the window at once would stall Redis for every user of it.
	MaxQuota = guard.MaxQuota
)

// LockConf configures a LockMiddleware. It is loaded with go-zero's conf
// package, defaults included.
type LockConf struct {
	// Prefix is the namespace of every lock key.
	Prefix string `json:",default=zerolock"`
	// Expire is the lock's lifetime in Redis: the window in window mode, the
	// safety net that frees a crashed process's lock in every mode (a
	// running handler's hold is renewed: see DisableRenew).
	Expire time.Duration `json:",default=5s"`
	// Mode is inflight, window, replay, limit or rate.
	Mode string `json:",default=inflight,options=inflight|window|replay|limit|rate"`
	// Permits is how many requests of one key limit mode lets run at once,
	// for the rules in limit mode that do not set their own.
	Permits int `json:",optional"`
	// Quota and Period are the rate of the rules in rate mode that do not
	// set their own: at most Quota requests of one key in any Period-long
	// window.
	Quota  int           `json:",optional"`
	Period time.Duration `json:",optional"`
	// RateLimitHeaders sends the RateLimit-Policy and RateLimit headers on
	// the admitted requests of every rule in rate mode, not only on its
	// refusals: clients see their remaining quota before they run out.
	RateLimitHeaders bool `json:",optional"`
	// FailOpen lets requests through, logged, when Redis cannot be reached.
	// By default they are refused with 503.
	FailOpen bool `json:",optional"`
	// MaxBodyBytes bounds the body read for json:, form: and body keys;
	// larger bodies are refused with 413.
	MaxBodyBytes int64 `json:",default=1048576"`
	// Renew is accepted for configurations written before renewal became
	// the default; it changes nothing. Renewal is on unless DisableRenew.
	Renew bool `json:",optional"`
	// DisableRenew turns off the renewal of holds while the handler runs. By
	// default, in every mode, the hold (a lock, or a limit mode permit) is
	// renewed from a third of Expire on, until the handler returns (also
	// after go-zero's timeout answered 503: the work still runs), so that
	// Expire only bounds how long a crashed process keeps a key: a handler
	// slower than Expire never runs beside its duplicate. The handler's
	// context is also cancelled when the hold is lost. A handler that
	// returns within a third of Expire costs only a timer (no renewal is
	// sent). Without renewal, a handler slower than Expire lets a duplicate
	// run beside it.
	DisableRenew bool `json:",optional"`
	// MaxHold bounds the renewal, counted from the acquisition: a handler
	// still running after it has its context cancelled
	// (zerolock.ErrMaxHold), its hold ends at its expiry, and that is
	// logged and counted (holds_lost_total, cause max_hold), so a hung
	// handler cannot hold its key forever. The default is 10 × the rule's
	// Expire (50s at the default 5s); it must be at least Expire.
	MaxHold time.Duration `json:",optional"`
	// Fence mints a fencing token per acquisition, which the handler reads
	// with zerolock.FenceFromContext and hands to storage that rejects
	// writes older than the last it saw. It cannot be combined with replay
	// mode, whose locks are taken by a script that also reads a stored
	// response and mints no token.
	Fence bool `json:",optional"`
	// Retain is how long replay mode keeps a completed response and
	// replays it to retries (and refuses the retries of one it could not
	// keep). Each kept response costs Redis memory for that long.
	Retain time.Duration `json:",default=24h"`
	// MaxResponseBytes bounds the response body replay mode keeps. A larger
	// response still reaches its client in full, but is not kept: its
	// retries are refused until Retain passes (logged).
	MaxResponseBytes int64 `json:",default=1048576"`
	// RejectCode is the status of a refused duplicate; it must be a 4xx.
	// 425 Too Early suits a caller such as dtm, which retries a 425 later
	// and reads a 409 as a failure of the business (see the README's
	// "With dtm").
	RejectCode int `json:",default=409"`
	// Message is the message of a refused duplicate's answer, instead of
	// the default English one (请勿重复提交, say), and of limit and rate
	// mode's 429; a rule's Message wins. The 400s that name a missing key keep theirs.
	Message string `json:",optional"`
	// Wait, in replay mode, lets a duplicate that arrives while the first
	// request runs wait up to Wait for its result, woken when it is stored,
	// and get it replayed, as a later retry would; one still waiting at
	// Wait is refused as without it. 0 (the default) refuses at once.
	Wait time.Duration `json:",optional"`
	// SharedKeys says that the rules' keys are shared by different callers
	// on purpose. Without it a replay rule must have a key that names the
	// caller (claim:, or header:Authorization), so that a stored response
	// is only ever replayed to the caller that made the first request: one
	// without is refused with an error wrapping ErrBadConfig. In the other
	// modes it silences the warning for rules without a per-user key.
	SharedKeys bool `json:",optional"`
	// TrustedProxyHops is the number of proxies in front of the service
	// that each append the address they received from to X-Forwarded-For.
	// With 0 (the default) the ip key is what go-zero's
	// httpx.GetRemoteAddr reports: the first X-Forwarded-For header as the
	// client wrote it, which a client behind an appending proxy controls.
	// With N it is the Nth address from the right, the one the outermost
	// trusted proxy saw, which holds only while the service is reachable
	// through those proxies alone; a request with fewer addresses is keyed
	// on its connection's peer.
	TrustedProxyHops int `json:",optional,range=[0:32]"`
	// Rules say which routes are locked and on which fields. A request that
	// matches no rule passes through untouched.
	Rules []LockRule `json:",optional"`
}

// LockRule locks one route.
type LockRule struct {
	// Method is the HTTP method, such as POST.
	Method string
	// Path is the go-zero route pattern, such as /orders/:id/pay.
	Path string
	// Keys are the source:name specs whose values identify a request.
	Keys []string `json:",optional"`
	// Expire overrides LockConf.Expire for this route.
	Expire time.Duration `json:",optional"`
	// Mode overrides LockConf.Mode for this route.
	Mode string `json:",optional,options=inflight|window|replay|limit|rate"`
	// Permits overrides LockConf.Permits for this route (limit mode only):
	// how many requests of one key run at once. Limit mode needs it here or
	// in LockConf; on a rule in another mode it is a configuration error.
	Permits int `json:",optional"`
	// Quota overrides LockConf.Quota for this route (rate mode only): how
	// many requests of one key are admitted in any Period-long window. Rate
	// mode needs it, of at least 1, here or in LockConf; on a rule in
	// another mode it is a configuration error.
	Quota int `json:",optional"`
	// Period overrides LockConf.Period for this route (rate mode only): the
	// window Quota counts in, at least 1ms. Rate mode needs it here or in
	// LockConf; on a rule in another mode it is a configuration error.
	Period time.Duration `json:",optional"`
	// RateLimitHeaders sends the rate headers on this route's admitted
	// requests too (see LockConf.RateLimitHeaders; rate mode only). It adds
	// to the configuration's.
	RateLimitHeaders bool `json:",optional"`
	// Retain overrides LockConf.Retain for this route (replay mode only).
	Retain time.Duration `json:",optional"`
	// DisableRenew turns renewal off for this route (see
	// LockConf.DisableRenew).
	DisableRenew bool `json:",optional"`
	// MaxHold overrides LockConf.MaxHold for this route.
	MaxHold time.Duration `json:",optional"`
	// MaxResponseBytes overrides LockConf.MaxResponseBytes for this route
	// (replay mode only).
	MaxResponseBytes int64 `json:",optional"`
	// Fingerprint lists the key specs whose values must be equal for a
	// retry to count as the same request (replay mode only). Without it the
	// fingerprint is the method, the route and its path variables, the
	// query, and the body: canonical JSON for application/json, the sorted
	// fields for forms, the bytes otherwise.
	Fingerprint []string `json:",optional"`
	// RejectCode overrides LockConf.RejectCode for this route; it must be
	// a 4xx. A rule in rate mode cannot set it: its refusal is always 429.
	RejectCode int `json:",optional"`
	// Message overrides LockConf.Message for this route.
	Message string `json:",optional"`
	// Wait overrides LockConf.Wait for this route (replay mode only).
	Wait time.Duration `json:",optional"`
	// SharedKeys says that this route's keys are shared by different
	// callers on purpose (see LockConf.SharedKeys). It adds to the
	// configuration's: a rule cannot unset a LockConf.SharedKeys that is
	// true.
	SharedKeys bool `json:",optional"`
	// SkipRouteCheck leaves the rule out of CheckRoutes, for a route that
	// is registered after the check runs.
	SkipRouteCheck bool `json:",optional"`
}
