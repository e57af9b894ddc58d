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
// and three lines wire it:
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
//     proxy that overwrites that header does it identify a client.
//   - body is the whole raw body.
//
// Every key is required: a request without it, or with an empty value, is
// answered 400 naming the spec.
//
// The lock key is the prefix, the rule's method and route pattern and a
// SHA-256 of the values: raw values never reach Redis or the logs.
//
// Installed with server.Use, the middleware matches a request to a rule by
// method and route pattern, as go-zero's router does, and lets through a
// request that the router served from another route (a static
// /orders/batch beside a rule for /orders/:id).
package middleware
