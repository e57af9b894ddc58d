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
// A key spec is source:name. The sources are path:id (a go-zero path
// variable), query:x, form:x, header:Idempotency-Key, json:order.id (a
// dotted path into a JSON body; numbers index arrays, as in items.0.sku),
// claim:userId (a claim go-zero's JWT middleware put in the context), ip
// (the client address as httpx.GetRemoteAddr reports it, without the
// port) and body (the whole raw body). Every key is required: a request
// without it is answered 400 naming the spec.
//
// The lock key is the prefix, the rule's method and route pattern and a
// SHA-256 of the values: raw values never reach Redis or the logs.
package middleware
