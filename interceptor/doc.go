// Package interceptor is a gRPC unary server interceptor for zrpc that runs
// the same request once: a client retry, a gateway replay or two consumers
// of one message that arrive while the first is being handled get
// codes.Aborted (or the RejectCode configured) with a google.rpc.RetryInfo
// detail, and never reach the method. In replay mode a retry of a
// completed call gets the first call's result (see Replay).
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
// and two lines add it to a zrpc server, the second checking that the
// server serves every rule's method:
//
//	server := zrpc.MustNewServer(c.RpcServerConf, func(s *grpc.Server) {
//		pb.RegisterPaymentsServer(s, srv)
//		logx.Must(interceptor.CheckServed(s, c.Lock))
//	})
//	server.AddUnaryInterceptors(interceptor.MustUnaryServerInterceptor(c.Lock, redis.MustNewRedis(c.LockRedis)))
//
// Key specs: field:order.items.0.sku (a dotted path into the request
// message, by proto or JSON field name; numbers index repeated fields, map
// fields take the key), metadata:x-request-id (an incoming metadata value),
// ctx:userId (a value the service's own auth put in the context under that
// string key) and peer (the caller's address without the port). A call
// without a key value gets codes.InvalidArgument naming the spec. As in
// proto3 itself, a field without explicit presence that holds its zero
// value (0, "", false) is not set, so it counts as missing: key on fields
// that a valid call always sets, or declare them optional.
//
// A rule without a metadata:, ctx: or peer key is logged at start-up, at
// error level since go-zero has no warning level: its field values then
// block every caller's call, not only the same caller's retries.
// SharedKeys: true on a rule whose keys are shared on purpose silences it.
//
// A method slower than Expire keeps its key, in every mode: by default the
// hold is renewed from a third of Expire on until the method returns (also
// after zrpc's timeout answered DeadlineExceeded), so Expire only bounds
// how long a crashed process keeps a key. MaxHold (default 10 × Expire)
// bounds a hung method: its context is cancelled with zerolock.ErrMaxHold
// and its key expires, logged and counted in
// zerolock_grpc_holds_lost_total. Before renewal became the default (it was
// the opt-in Renew), a retry sent after Expire ran a slow method twice.
// DisableRenew: true turns it off (a Redlock backend needs it).
//
// # Refusals
//
// RejectCode (on the conf or per rule) is the code of a refused duplicate
// in inflight, window and replay modes: Aborted by default, FailedPrecondition
// for a dtm branch (dtm reads Aborted as a failure of the business and rolls
// the global transaction back, FailedPrecondition as "still running" and
// retries later; see the README's "With dtm"). It is written as
// codes.Code.String() spells it or in UPPER_SNAKE. OK and the codes
// go-zero counts as failures of the server (see Limit) are refused at
// start-up, since a refusal must never open the caller's breaker. Every
// refusal a retry may get past carries a RetryInfo. Message (on the conf
// or per rule, 请勿重复提交 say) is the status message of a refused
// duplicate and of limit and rate mode's refusals. A rate rule's own
// RejectCode is also the code of its refusal (see Rate).
//
// # Methods
//
// A rule's Method must be /package.Service/Method as the service's .proto
// declares it, and a service linked into the binary must declare it, as
// generated code does: otherwise no call ever matches the rule and it
// silently locks nothing, so UnaryServerInterceptor refuses it with an
// error that suggests the linked methods of that name. Field paths are
// then checked against the method's request message at start-up too. A
// rule for a method that code registers at run time (a dynamicpb service,
// a proxy) sets SkipMethodCheck; its field paths are checked on the
// method's first call, which fails with codes.Internal naming the rule if
// one is wrong. CheckServed, run once the services are registered, also
// catches a method that is linked but that this server does not serve.
//
// # Replay
//
// In replay mode (Mode: replay, on the conf or a rule) a retry of a
// completed call gets the first call's result instead of running the
// method again, which is what a client that lost the first answer needs:
//
//	Lock:
//	  Rules:
//	    - Method: /payments.Payments/Pay
//	      Mode: replay
//	      Keys: [field:order.id, ctx:userId]
//	      Retain: 24h                  # the default
//	      Fingerprint: [field:amount]  # optional
//
// A stored result is only ever replayed to the caller that made the first
// call: a replay rule needs a key that names the caller, a ctx: value (the
// caller the service's auth interceptor, placed before this one, put in
// the context) or metadata:authorization (the credential itself), and is
// refused at start-up without one, with an error wrapping ErrBadConfig.
// Other metadata, a field or peer does not count: callers share or choose
// them. A rule whose keys are shared by different callers on purpose sets
// SharedKeys: true (or LockConf.SharedKeys, for every rule), and a result
// stored for one caller is then replayed to any caller who sends the same
// keys.
//
// The first call runs, and its result is stored in place of its lock
// before the answer goes out: the response message, or the code, message
// and details of the error the method returned. A retry while it runs is
// refused with RejectCode (Aborted by default), as in inflight mode. A retry after it, for Retain, gets the same
// message or the same status, with header metadata idempotent-replayed:
// true (ReplayedHeader), and the method does not run. A call with the same
// key but another request is refused with codes.InvalidArgument, and the
// stored result is kept. The request is the whole request message in its
// canonical form (as a message key is hashed, see below), or, with
// Fingerprint, those specs' values, read as keys are.
//
// Internal, Unknown, Unavailable, DeadlineExceeded and Canceled answers and
// panics are not stored, so the retry runs again; every other answer is,
// even when the client left before it came. A result over 4 MiB is not
// stored and its retries are refused with RejectCode until Retain passes
// (logged). A stored result that this binary cannot read (another format,
// a response type it does not link) is refused the same way, with a
// RetryInfo, and logged, never replayed wrongly and never Internal (the
// caller did nothing wrong, and the result may be a later build's during a
// rolling deploy); the response types of a replayed method must be linked,
// as generated code links them.
//
// Results live in Redis, so they survive a restart, on node, Sentinel and
// Cluster stores; each costs Redis memory for Retain. Replay mode needs a
// backend that can store a result in place of its lock: Redlock, etcd and
// ZooKeeper backends are refused at start-up, and so is Fence, since the
// acquisition that also reads a stored result mints no fencing token.
//
// # Limit
//
// In limit mode (Mode: limit and Permits: N, on the conf or a rule) a rule
// lets up to N calls of one key run at once, two concurrent exports per
// caller, say. Each call holds a permit of a Redis semaphore while the
// method runs and gives it back when the method returns or panics; a
// crashed server's permits free themselves after Expire, and renewal (the
// default) keeps a long call's permit alive. The call over the limit gets
// codes.Aborted with a RetryInfo (the time until the next permit frees by
// expiry; an estimate, since renewal keeps extending permits) and a QuotaFailure naming the method, the key specs and N.
//
// Not ResourceExhausted, the code of a quota: go-zero counts it as a
// failure of the server, in the zrpc client's breaker, the server's
// breaker and the p2c balancer (zrpc/internal/codes.Acceptable refuses
// DeadlineExceeded, Internal, Unavailable, DataLoss, Unimplemented and
// ResourceExhausted), so one caller's burst over its limit would open the
// breaker for every caller of the service. Aborted is accepted; the
// QuotaFailure tells a limit refusal from a duplicate's. Limit mode needs
// a Redis store backend: Redlock, etcd and ZooKeeper backends are refused
// at start-up, and so are Fence with limit mode and Permits on a rule in
// another mode.
//
// # Rate
//
// In rate mode (Mode: rate, Quota: N and Period: d, on the conf or a rule)
// a rule admits up to N calls of one key in any d-long window, ten
// searches a second per caller, say. It takes no lock: each call is
// counted by one script on the Redis server's clock, in one round trip,
// against a sliding log that never admits more than N in any d-long
// window (a fixed window admits up to 2N across a boundary). The call
// over the rate gets codes.Aborted, or the code the rule's own RejectCode
// names (the configuration's RejectCode is a duplicate's), with a
// RetryInfo (the time until a call of the key would be admitted) and a
// QuotaFailure naming the method, the key specs and N (RateQuotaMetric):
// never ResourceExhausted, for the reason above. Rate mode needs a Redis
// store backend; Redlock, etcd and ZooKeeper backends are refused at
// start-up, and so are Fence with rate mode, Expire, DisableRenew and
// MaxHold on a rate rule (it holds no lock), and Quota or Period on a rule
// in another mode.
//
// # What a key hashes
//
// Keys are derived by the same code as the REST middleware's: the prefix,
// the method and a SHA-256 of the values, never the values themselves.
// Numbers of every width are one value: int32 7, uint64 7 and double 7.0
// are one key. A field that is a whole message (field:order) is hashed in
// a canonical form, not as its bytes: fields the service's proto does not
// declare (a newer client's, or junk) are ignored at any depth, map
// entries are taken in key order, and a field set to its default (an
// optional set to 0, a message set to an empty one) is the same as unset:
// the getters return the same values, and only a handler that tests
// presence (HasX, != nil) could tell them apart, so erring this way costs
// at worst a false Aborted, where the other way would let a duplicate
// through. A message that is empty in that sense counts as missing. Only
// the choice of a oneof member is kept even when its value is the default.
// A google.protobuf.Any inside a key is hashed as the bytes it carries,
// which are not canonical: key on the fields of its content instead.
//
// A double is hashed as the float64 it holds: two values are one key
// exactly when they are the same float64 (-0 counts as 0). So
// 0.1 and 0.10000000000000001 written in JSON and transcoded by a gateway
// are one double and one key (the REST middleware's json: keys, which
// hash the text, tell them apart), while 0.1 and 0.10000000000000002 are
// two. A float field is widened to float64 first: a float holding 0.1 is
// 0.10000000149011612, not the double 0.1. A key field that is NaN or
// infinite is refused with codes.InvalidArgument; inside a message key,
// NaN (any NaN), +Inf and -Inf hash as one value each.
//
// # Client
//
// UnaryClientInterceptor is the other half, for the zrpc clients that call
// such a server: each call to the methods of its ClientConf gets an
// idempotency key (metadata idempotency-key: the caller's own, or one
// derived from the request the calling handler serves, or a random one)
// and is retried with it on Unavailable, on a refusal that carries a
// RetryInfo (but not this interceptor's refusal of a duplicate outside
// replay mode: see ReasonDuplicate), and when AttemptTimeout cut it,
// within MaxAttempts and the caller's deadline:
//
//	conn := zrpc.MustNewClient(c.PaymentsRpc,
//		zrpc.WithUnaryClientInterceptor(interceptor.MustUnaryClientInterceptor(c.Idempotency)))
//
// A server rule in replay mode keyed on metadata:idempotency-key (and the
// caller) then runs the call once and hands its result to every retry.
//
// # Behind go-zero's gateway
//
// go-zero's gateway forwards to the service only the HTTP headers named
// Grpc-Metadata-*, as metadata with a gateway- prefix
// (gateway-idempotency-key), and drops a plain Idempotency-Key or
// Authorization. GatewayHeaders, passed to gateway.WithHeaderProcessor in
// the gateway, forwards them under their own names, so that a rule keyed
// on metadata:idempotency-key and metadata:authorization serves the
// gateway's clients as it serves zrpc's:
//
//	server := gateway.MustNewServer(c, gateway.WithHeaderProcessor(
//		interceptor.GatewayHeaders("Idempotency-Key", "Authorization")))
//
// # Metrics and traces
//
// Calls that match a rule are counted in
// zerolock_grpc_requests_total{method,outcome} (acquired, rejected,
// limited, bad_request, store_error, fail_open, in replay mode replayed
// and mismatch, and in rate mode admitted and rate_refused), and their handlers' hold time in
// zerolock_grpc_lock_hold_seconds{method}, on go-zero's Prometheus
// endpoint. Each rule's lock reports to package observe under the rule's
// full method as its name (/pkg.Service/Method, never a key): the
// zerolock_lock_* metrics, and a "zerolock.acquire" span, a child of
// zrpc's span for the call, with the outcome (acquired, or busy for a
// duplicate).
package interceptor
