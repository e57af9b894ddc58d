// Package interceptor is a gRPC unary server interceptor for zrpc that runs
// the same request once: a client retry, a gateway replay or two consumers
// of one message that arrive while the first is being handled get
// codes.Aborted with a google.rpc.RetryInfo detail, and never reach the
// method.
//
// Rules name a full method and the request fields that identify a call:
//
//	Lock:
//	  Expire: 5s
//	  Rules:
//	    - Method: /payments.Payments/Pay
//	      Keys: [field:order.id, metadata:x-user-id]
//	LockRedis:          # zrpc's RpcServerConf already has a Redis field
//	  Host: 127.0.0.1:6379
//
// and one line adds it to a zrpc server:
//
//	server.AddUnaryInterceptors(interceptor.MustUnaryServerInterceptor(c.Lock, redis.MustNewRedis(c.LockRedis)))
//
// Key specs: field:order.items.0.sku (a dotted path into the request
// message, by proto or JSON field name; numbers index repeated fields, map
// fields take the key), metadata:x-request-id (an incoming metadata value),
// ctx:userId (a value the service's own auth put in the context under that
// string key) and peer (the caller's address without the port). Field paths
// are checked against the method's descriptor at start-up when its package
// is linked, otherwise on the method's first call. A call without a key
// value gets codes.InvalidArgument naming the spec. As in proto3 itself, a
// field without explicit presence that holds its zero value (0, "", false)
// is not set, so it counts as missing: key on fields that a valid call
// always sets, or declare them optional.
//
// Keys are derived by the same code as the REST middleware's: the prefix,
// the method and a SHA-256 of the values, never the values themselves.
package interceptor
