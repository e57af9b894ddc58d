// Goctl-zerolock is a goctl plugin that writes the Lock.Rules of a go-zero
// service's YAML (zerolock's REST middleware, middleware.LockRule) from the
// routes of its .api file, so that a rule's method and path come from the
// route they lock and its keys are checked against the route's types.
//
// Install it, and run it through goctl:
//
//	cd goctl-zerolock && go install .
//	goctl api plugin -plugin goctl-zerolock="-yaml etc/api.yaml" -api example/api/demo.api -dir .
//
// A route declares its rule in its @doc block. The property lock holds
// the keys, comma-separated; every other field of middleware.LockRule is
// the property lock followed by the field's name:
//
//	@doc (
//		summary:    "Make a payment"
//		lock:       "header:Idempotency-Key,claim:userId"
//		lockMode:   replay
//		lockRetain: "24h"
//	)
//	@handler CreatePayment
//	post /payments (CreatePaymentReq) returns (CreatePaymentResp)
//
// The properties are lock (the keys), lockMode (inflight, window, replay,
// limit or rate), lockExpire, lockPeriod, lockRetain, lockWait,
// lockMaxHold (durations such as 10s), lockDisableRenew, lockSharedKeys,
// lockSkipRouteCheck, lockRateLimitHeaders (true or false), lockPermits,
// lockQuota, lockMaxResponseBytes, lockRejectCode (numbers),
// lockFingerprint (keys, comma-separated) and lockMessage. goctl takes a @doc value in quotes, in backquotes or as a
// bare word, so a number is quoted (lockPermits: "2"), and hands it on as
// written, without unescaping: a lockMessage with double quotes in it goes
// in backquotes. A property whose name starts with lock (in any case) that
// is none of these is an error, as is a value that does not parse. A rate
// rule, at most lockQuota requests of one key in any lockPeriod:
//
//	@doc (
//		summary:    "Log in"
//		lock:       "ip,json:userId"
//		lockMode:   rate
//		lockQuota:  "3"
//		lockPeriod: "1m"
//	)
//
// Settings that contradict each other within a rule are refused as the
// middleware would refuse them (lockPermits outside limit mode, lockRetain
// outside replay mode, lockQuota outside rate mode, lockExpire or
// lockRejectCode in rate mode, ...); those that depend on the Lock
// section's own settings (its Mode, Permits, Quota, Period, SharedKeys)
// are left to the middleware's check at start-up, so a rule in rate mode
// may leave lockQuota and lockPeriod to the Lock section's Quota and
// Period.
//
// Each key is parsed as the middleware parses it and checked against the
// route: json: paths against the request type's json tags (nested structs,
// arrays by index: json:items.0.sku), path: against the route's :variables
// (its group's prefix included), form: and query: against its form tags,
// claim: against its group's jwt:, header: names against HTTP's token
// syntax. A replay rule must name its caller (claim:, or
// header:Authorization) unless lockSharedKeys is true, as the middleware
// requires at start-up (a service whose Lock section sets SharedKeys says
// lockSharedKeys on the route too). Every problem is reported, all at
// once, with the .api file and line it is about.
//
// The rules are written, in the order the routes are written, between two
// lines of the YAML that mark the generated block, inside Lock's Rules and
// indented as its entries:
//
//	Lock:
//	  Expire: 5s
//	  Rules:
//	    # goctl-zerolock: begin
//	    # goctl-zerolock: end
//
// The rest of the file (the Lock section's other settings, comments,
// hand-written rules outside the markers) is left as it is. The flags,
// the ARGS goctl passes on, with paths relative to goctl's -dir:
//
//	-yaml FILE  the YAML to write between its markers (default
//	            etc/<service>.yaml, the file goctl api go writes)
//	-o FILE     write the rules alone, as a YAML fragment, instead
//	-check      write nothing, and fail, naming the first line that
//	            differs, when the file is not what the .api declares: for CI
package main
