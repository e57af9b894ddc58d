// Package middleware is a go-zero REST middleware that blocks duplicate
// submissions ("anti-double-click"): requests that carry the same key
// fields as one already being handled are refused with 409 and a
// Retry-After header, and never reach the handler.
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
//	middleware.MustCheckRoutes(server, c.Lock) // after the routes are added
//
// Mistakes fail at start-up: a malformed rule in NewLockMiddleware; a rule
// whose Method and Path match no route (/order for /orders) in
// CheckRoutes (SkipRouteCheck on a rule whose route comes later); and a
// go-zero store whose server rejects the CLIENT SETINFO go-zero sends on
// new connections (Redis before 7.2, miniredis), which would trip go-zero's
// circuit breaker under a burst of new connections and answer 503: set
// DisableIdentity: true in its RedisConf. A rule with no per-user key is
// logged as a warning at error level.
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
package middleware
