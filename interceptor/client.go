package interceptor

import (
	"errors"
	"fmt"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"google.golang.org/grpc"
)

// IdempotencyKeyMetadata is the outgoing metadata that carries a call's
// idempotency key, for the server interceptor to read with a
// metadata:idempotency-key key spec.
const IdempotencyKeyMetadata = "idempotency-key"

// Defaults of ClientConf, as its conf tags declare them.
const (
	// DefaultMaxAttempts is how many attempts a logical call makes at most,
	// the first included.
	DefaultMaxAttempts = 3
	// DefaultBackoff is the first wait between two attempts.
	DefaultBackoff = 100 * time.Millisecond
)

// ClientConf configures UnaryClientInterceptor. It is loaded with
// go-zero's conf package, defaults included; zero fields of a ClientConf
// built in code take the same defaults.
//
// Each call to one of Methods is a logical call with one idempotency key,
// sent as the outgoing metadata idempotency-key on each of its attempts,
// so that a server interceptor keyed on metadata:idempotency-key (in
// replay mode: plus a per-caller key, or SharedKeys) runs it once however
// many attempts reach it, and answers a late attempt with the first one's
// result.
type ClientConf struct {
	Methods        []string      // full method names (/pkg.Service/Method) whose calls get a key and may be retried
	MaxAttempts    int           `json:",default=3"`     // the first try included
	Backoff        time.Duration `json:",default=100ms"` // first wait, then doubled with jitter; a RetryInfo delay wins
	AttemptTimeout time.Duration `json:",optional"`      // a bound on one attempt, so a hung attempt can be retried
}

// withClientDefaults gives the zero fields of c their conf-tag defaults.
func withClientDefaults(c ClientConf) ClientConf {
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Backoff == 0 {
		c.Backoff = DefaultBackoff
	}
	return c
}

// UnaryClientInterceptor validates c and returns a client interceptor that
// gives each call to one of c.Methods an idempotency key and retries it,
// with that key, when a retry is safe. Calls to other methods pass
// straight through, untouched.
//
// The key is the caller's own, when the outgoing metadata already has an
// idempotency-key. Otherwise, in a handler of a request that the server
// interceptor or the middleware guards, it is derived from that request's
// lock key, the method, and the ordinal of this call to the method within
// the request: a handler that calls a method twice makes two keys, and
// under a replay rule the same request retried makes the same keys (under
// the other modes, a later request with the lock key is new work, and
// each request's calls get keys of their own). Anywhere else (a cron job, a queue
// consumer) it is a fresh random key per logical call. The key is made
// once per logical call and sent on every attempt of it. Ordinals follow
// the order in which the handler makes its calls, so a handler that calls
// one method from several goroutines at once should put its own key on
// each call (one per item, say): otherwise a retried request may number
// them in another order, and a server in replay mode refuses a key reused
// for another request with InvalidArgument.
//
// An attempt is retried when it failed with codes.Unavailable, when it was
// refused with a google.rpc.RetryInfo, or when AttemptTimeout cut it. Waits
// are Backoff, then doubled, each spread by ±20%; a RetryInfo delay wins.
// This interceptor's own refusal of a duplicate (an ErrorInfo of
// ReasonDuplicate) is retried only from a replay rule, whose retry gets
// the first call's result once it is in, and then after the back-off,
// never more than the RetryInfo delay (which is how long the first call's
// hold has left, not when its result comes); from an inflight or window
// rule it is the answer, since a retry once the first call ended would
// run the method again, or be refused again. No other code is retried, no more than
// MaxAttempts attempts are made, and no attempt or wait is started that
// the caller's deadline would cut: the last attempt's error is returned.
//
// Add it to a zrpc client with zrpc.WithUnaryClientInterceptor:
//
//	conn := zrpc.MustNewClient(c.PaymentsRpc,
//		zrpc.WithUnaryClientInterceptor(interceptor.MustUnaryClientInterceptor(c.Idempotency)))
//
// zrpc chains its own interceptors before the ones given as options, so
// this one runs inside them: tracing, duration logging, Prometheus, the
// breaker and the timeout see one logical call, and only the transport
// sees each attempt. That is what keeps retries from becoming a storm:
//   - zrpc's Timeout (or a WithCallTimeout) is the deadline of the whole
//     logical call, attempts and waits included, never of one attempt;
//     AttemptTimeout bounds one attempt within it.
//   - zrpc's breaker counts each logical call once, by its last
//     attempt's outcome, and once it opens it refuses calls before any
//     attempt is made, so retrying never multiplies the load on a failing
//     server by more than MaxAttempts at one hop, and a breaker that sheds
//     calls sheds all of their attempts. Across hops retries multiply: a
//     handler that passes an Unavailable up lets its own callers retry the
//     whole request; retry at one hop.
//   - A call's span, its duration log and its metrics cover its attempts
//     and waits together.
//
// Configuration problems are errors wrapping ErrBadConfig: a method that is
// not /package.Service/Method, one that a service linked into the binary
// does not declare (with the methods it does, or those of that name
// elsewhere) or declares streaming, MaxAttempts below 1, and a negative
// Backoff or AttemptTimeout. A method whose service is not linked at all
// (a client built from a hand-written descriptor, a generic proxy) is
// accepted and logged once, at error level since go-zero has no warning
// level.
func UnaryClientInterceptor(c ClientConf) (grpc.UnaryClientInterceptor, error) {
	c = withClientDefaults(c)
	var errs []error
	if c.MaxAttempts < 1 {
		errs = append(errs, fmt.Errorf("%w: ClientConf.MaxAttempts is %d: set it to 1 or more (1 never retries), or leave it out for %d",
			ErrBadConfig, c.MaxAttempts, DefaultMaxAttempts))
	}
	if c.Backoff < 0 {
		errs = append(errs, fmt.Errorf("%w: ClientConf.Backoff is %v: set it to a positive duration, or leave it out for %v",
			ErrBadConfig, c.Backoff, DefaultBackoff))
	}
	if c.AttemptTimeout < 0 {
		errs = append(errs, fmt.Errorf("%w: ClientConf.AttemptTimeout is %v: set it to a positive duration, or leave it out to bound attempts by the caller's deadline only",
			ErrBadConfig, c.AttemptTimeout))
	}
	methods := make(map[string]bool, len(c.Methods))
	for _, m := range c.Methods {
		if methods[m] {
			continue
		}
		if err := checkClientMethod(m); err != nil {
			errs = append(errs, fmt.Errorf("%w: ClientConf.Methods: %s: %v", ErrBadConfig, m, err))
		}
		methods[m] = true
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cl := &client{conf: c, methods: methods}
	return cl.intercept, nil
}

// MustUnaryClientInterceptor is UnaryClientInterceptor that exits through
// logx.Must on a bad configuration, as go-zero's MustNew functions do.
func MustUnaryClientInterceptor(c ClientConf) grpc.UnaryClientInterceptor {
	i, err := UnaryClientInterceptor(c)
	logx.Must(err)
	return i
}
