// Package middleware is a go-zero REST middleware that blocks duplicate
// submissions ("anti-double-click"): requests that carry the same key
// fields as one already being handled are refused with 409 and a
// Retry-After header, and never reach the handler. In replay mode it also
// answers the retries of a completed request with its stored response
// (idempotency keys). In limit mode it caps the requests of one key that
// run at once, and in rate mode those of one key admitted per period (429
// with the RateLimit headers: see Rate).
//
// Rules live in YAML next to the rest of a go-zero service's configuration:
//
//	Lock:
//	  Expire: 5s
//	  Rules:
//	    - Method: POST
//	      Path: /orders
//	      Keys: [claim:userId, json:orderId]
//
// and four lines wire it:
//
//	type Config struct {
//		rest.RestConf
//		Redis redis.RedisConf
//		Lock  middleware.LockConf
//	}
//
//	store := redis.MustNewRedis(c.Redis)
//	lock := middleware.MustNewLockMiddleware(c.Lock, store)
//	server.Use(lock.Handle)
//	lock.MustCheckRoutes(server) // after the routes are added
//
// Mistakes fail at start-up: a malformed rule in NewLockMiddleware (a
// replay rule none of whose keys names the caller among them, see
// LockConf.SharedKeys); a rule whose Method and Path match no route (/order for /orders) in
// CheckRoutes (SkipRouteCheck on a rule whose route comes later); and a
// go-zero store whose server rejects the CLIENT SETINFO go-zero sends on
// new connections (Redis before 7.2, miniredis), which would trip go-zero's
// circuit breaker under a burst of new connections and answer 503: set
// DisableIdentity: true in its RedisConf. A rule with no per-user key is
// logged as a warning at error level, unless SharedKeys says its keys are
// shared on purpose.
//
// A handler slower than Expire keeps its key, in every mode: by default the
// hold is renewed from a third of Expire on until the handler returns (also
// after go-zero's timeout answered 503: the work still runs), so Expire
// only bounds how long a crashed process keeps a key, and a retry never
// runs beside a slow first request. MaxHold (default 10 × Expire) bounds a
// hung handler: its context is cancelled with zerolock.ErrMaxHold and its
// key expires, logged and counted in zerolock_http_holds_lost_total. This
// is the default since renewal stopped being the opt-in Renew: before, a
// retry sent after Expire ran a slow payment twice. DisableRenew: true
// turns it off (a Redlock backend needs it: its locks cannot renew).
//
// A key spec is source:name. Every key reads what go-zero's httpx.Parse
// would hand the handler, so a client cannot vary what the key sees while
// the handler sees the same request:
//
//   - path:id is a go-zero path variable of the rule's pattern.
//   - query:x and form:x read the values go-zero's form tag reads: a
//     url-encoded or multipart body's and the query's, name[] folded into
//     name, empty values ignored. More than one value is refused with 400.
//   - header:Idempotency-Key is a header; repeated, it is refused.
//   - json:order.id is a dotted path into a JSON body (numbers index arrays,
//     as in items.0.sku); like go-zero, only an application/json body is
//     read as JSON.
//   - claim:userId is a claim go-zero's JWT middleware put in the context
//     (numbers arrive as json.Number). go-zero keeps the standard claims
//     (sub, exp, iat, iss, aud, nbf, jti) out of the context, so rules
//     naming them are refused at start-up.
//   - ip is the client address as httpx.GetRemoteAddr reports it, without
//     the port. It trusts X-Forwarded-For as go-zero does: only behind a
//     proxy that overwrites that header does it identify a client. Behind
//     proxies that append to it, the client writes the first address, so
//     set TrustedProxyHops to their number: the key is then the address
//     the outermost of them saw.
//   - body is the whole body: for an application/json body its canonical
//     JSON (whitespace, member order and number spelling do not matter, as
//     for json: keys), for any other content type its bytes as sent.
//
// Every key is required: a request without it, or with an empty value, is
// answered 400 naming the spec.
//
// JSON numbers are compared by exact decimal value: 1, 1.0 and 1e0 are one
// key, but 0.1 and 0.10000000000000001, which a handler decoding into
// float64 sees as the same number, are two. Key on strings or integers
// where a client could vary a float's spelling.
//
// A body over MaxBodyBytes is answered 413 with the JSON error body only
// while go-zero lets it through: go-zero's RestConf.MaxBytes (also 1 MiB by
// default) answers a larger declared Content-Length with its own empty 413
// before any middleware runs. Keep MaxBytes above MaxBodyBytes for the
// middleware's answer.
//
// The lock key is the prefix, the rule's method and route pattern and a
// SHA-256 of the values: raw values never reach Redis or the logs.
//
// Installed with server.Use, the middleware matches a request to a rule by
// method and route pattern, as go-zero's router does, and lets through a
// request that the router served from another route (a static
// /orders/batch beside a rule for /orders/:id).
//
// # Answers, error handlers and conventions
//
// Every answer the middleware gives instead of running the handler (a
// refused duplicate, the 400s of a key it cannot read, 413, 422, 429, the
// 503 of a store that is down) is a *Error, written directly as its status
// and the JSON body {"code": ..., "message": ...}. It does not go through
// the error handler of httpx.SetErrorHandler or SetErrorHandlerCtx: the
// one go-zero's docs show answers every error it does not know with an
// empty 500, and go-zero's breaker, which counts every 5xx of a route,
// would then drop other users' requests to it with 503. A service with a
// convention of its own (HTTP 200 and {code, msg}, as go-zero's x/http
// answers, with numeric business codes) sets one refusal handler:
//
//	lock.SetRefusalHandler(func(ctx context.Context, e *middleware.Error) (int, any) {
//		return http.StatusOK, Response{Code: codeOf(e), Msg: e.Message}
//	})
//
// It cannot make a refusal a 5xx: such a status is replaced with the
// refusal's own (see SetRefusalHandler).
//
// RejectCode (409 by default, a 4xx; on the conf or per rule) is the
// status of a refused duplicate, and Message (on the conf or per rule,
// 请勿重复提交 say) its message, and that of limit mode's 429; the 400s
// that name a missing key keep theirs.
//
// # Modes
//
// Mode (per LockConf, or per rule) says what a duplicate gets:
//
//	           concurrent duplicate   retry after completion       same key, other request
//	inflight   409 + Retry-After      runs again                   runs (only the keys are compared)
//	window     409 + Retry-After      409 until Expire passes      409 until Expire passes
//	replay     409 + Retry-After      the first response, replayed 422 idempotency_key_reused
//
// # Replay: idempotency keys
//
// In replay mode a rule keyed on the client's idempotency key
// (Keys: [header:Idempotency-Key, claim:userId]) keeps the first response
// for Retain (24h) and hands it to every retry, so a client that lost the
// response of a payment gets that payment, not a second one:
//
//	Lock:
//	  Rules:
//	    - Method: POST
//	      Path: /payments
//	      Keys: [header:Idempotency-Key, claim:userId]
//	      Mode: replay
//
// Idempotency keys are per caller: a client chooses its Idempotency-Key,
// and another client can send the same one. So that a stored response is
// only ever replayed to the caller that made the first request, a replay
// rule needs a key that names the caller, a claim: (go-zero's JWT verified
// it) or header:Authorization (the credential itself); without one it is
// refused at start-up with an error wrapping ErrBadConfig. An ip, another
// header or a body value does not count: callers share or choose them. A
// rule whose keys are shared by different callers on purpose sets
// SharedKeys: true (or LockConf.SharedKeys, for every rule), and a
// response stored for one caller is then replayed to any caller who sends
// its key.
//
// The handler's response is held, not written, until it returns; it is
// then stored in Redis in place of the lock (only while this request still
// holds it) before the client sees it, so a retry sent the moment the
// answer arrives is replayed. A retry gets the same status, the same body
// bytes and the headers the handler set, except Set-Cookie and the
// hop-by-hop ones, plus Idempotent-Replayed: true; the handler does not
// run. A 5xx or a panic is not kept: the key is freed and the retry runs
// again. A 2xx or 3xx is kept even when the client left or go-zero's
// timeout answered 503 meanwhile: the work happened, and the retry gets
// its real result. A 4xx is kept while the request was live; once its
// context ended a 4xx is most often the handler reporting the
// cancellation, and the retry runs again.
//
// A retry is the same request when its fingerprint matches: by default the
// method, the route and its path variables, the query, and the body
// (canonical JSON, form fields sorted, other bodies byte for byte; so the
// body is read, up to MaxBodyBytes, on every replay route). A rule's
// Fingerprint lists specs, read as keys are, to compare only those values.
// Another request under the same key is refused with 422 (ErrKeyReused),
// and the stored response is left as it is.
//
// A response body over MaxResponseBytes (1 MiB), or one the handler
// flushed (streamed), reaches its client as written but is not kept: its
// retries are refused with RejectCode until Retain passes, and that is
// logged at error level. A stored value that cannot be read is answered
// with RejectCode, stored_result_unreadable and Retry-After, and logged.
// Replay needs a backend that can keep a result in place of its lock: the
// Redis ones (node, Sentinel, Cluster); Redlock, etcd and ZooKeeper are
// refused at start-up, and so is Fence with replay mode. The hold is
// renewed until the response is stored. A kept response costs Redis memory for Retain: about 900 bytes
// (MEMORY USAGE) for a 1 KiB JSON answer, which is compressed, and 360 for
// a 100-byte one.
//
// # Limit: concurrent requests per key
//
// In limit mode a rule lets up to Permits requests of one key run at once,
// two concurrent exports per user, say, rather than one:
//
//	Lock:
//	  Rules:
//	    - Method: GET
//	      Path: /exports
//	      Keys: [claim:userId]
//	      Mode: limit
//	      Permits: 2
//
// Each request holds a permit of a Redis semaphore (redislock.Semaphore)
// while its handler runs, and gives it back when the handler returns or
// panics: when go-zero's timeout answers 503 first, the permit is held
// until the handler itself returns, since the work still runs. The next
// request over the limit gets 429 limit_exceeded (ErrLimitExceeded) with
// Retry-After: the time until the next permit frees by expiry, since one
// may free sooner on release (permits of running handlers keep being
// extended, so it is an estimate, not a bound). A permit of a crashed
// server frees itself after Expire; renewal keeps a long export's permit
// alive. Limit
// keys live apart from the keys of the other modes, so switching a
// route's mode never meets the other kind's value. go-zero's own breaker
// counts only 5xx answers, so a 429 does not open it. Limit mode needs
// Permits of at least 1 (on the rule, or LockConf.Permits as the default),
// and a Redis store backend (node, Sentinel or Cluster): Redlock, etcd and
// ZooKeeper backends are refused at start-up, and so are Fence with limit
// mode and Permits on a rule in another mode.
//
// # Rate: requests per period per key
//
// In rate mode a rule admits up to Quota requests of one key in any
// Period-long window, five login attempts a minute per address, say:
//
//	Lock:
//	  Rules:
//	    - Method: POST
//	      Path: /login
//	      Keys: [ip]
//	      Mode: rate
//	      Quota: 5
//	      Period: 1m
//
// A rate rule takes no lock: each request is counted by one script on the
// Redis server's clock (never a server instance's, so instances whose
// clocks disagree count as one), in one round trip, and then runs or is
// refused. The count is a sliding log, exact: no Period-long window ever
// holds more than Quota admissions, and a key not seen for a Period
// admits Quota at once. It costs Redis memory in proportion to Quota (an
// entry per admission of the last Period, tens of bytes each), where a
// fixed window (go-zero's PeriodLimit) would admit up to 2×Quota across a
// window's boundary, and a token bucket (GCRA) with a burst of Quota up to
// 2×Quota−1 in a Period.
//
// The request over the rate gets 429 rate_limited (ErrRateLimited), never
// RejectCode, with Retry-After (whole seconds until a request would be
// admitted, rounded up) and the headers of the IETF httpapi draft
// "RateLimit header fields for HTTP":
//
//	RateLimit-Policy: "POST /login";q=5;w=60
//	RateLimit: "POST /login";r=0;t=42
//
// r is the quota left and t the seconds until the whole quota is back.
// RateLimitHeaders (on LockConf or the rule) sends them on admitted
// requests too, so clients see their quota before they run out. Keys are
// as for every rule: [claim:userId] limits each user, [ip] each address
// (see TrustedProxyHops), and [] the whole route, with the warning of a
// rule that has no per-client key unless SharedKeys. A Redis that is down
// refuses with 503, or with FailOpen serves the request uncounted. Rate
// mode needs a Quota of at least 1 and a Period of at least 1ms (on the
// rule, or LockConf's as the default) and a Redis store backend; Redlock,
// etcd and ZooKeeper backends are refused at start-up, and so are Fence
// with rate mode, RejectCode, Expire, DisableRenew and MaxHold on a rate
// rule (it holds no lock), and Quota or Period on a rule in another mode.
//
// # Metrics and traces
//
// Requests that match a rule are counted in
// zerolock_http_requests_total{route,outcome} (acquired, rejected,
// limited, bad_request, store_error, fail_open, in replay mode replayed
// and mismatch, and in rate mode admitted and rate_refused), and their handlers' hold time in
// zerolock_http_lock_hold_seconds{route}, on go-zero's Prometheus
// endpoint. Each rule's lock reports to package observe under the rule's
// route as its name ("POST /orders", never a key): the
// zerolock_lock_* metrics, and a "zerolock.acquire" span, a child of
// go-zero's span for the request, with the outcome (acquired, or busy for
// a duplicate).
package middleware
