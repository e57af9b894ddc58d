package interceptor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/core/stores/redis"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/guard"
	"github.com/zerolock/zerolock/internal/keyspec"
	"github.com/zerolock/zerolock/redislock"
)

var metrics = guard.NewMetrics("grpc", "method")

// UnaryServerInterceptor validates c and returns an interceptor that locks
// calls in store. Configuration problems are errors wrapping ErrBadConfig
// here, at start-up: a malformed rule, a method that no service linked into
// the binary has (unless the rule sets SkipMethodCheck, whose field paths
// are then checked on the method's first call, failing it with
// codes.Internal naming the rule if a path is wrong), and a go-zero store
// whose server rejects the CLIENT SETINFO go-zero sends on new connections
// (wrapping redislock.ErrIdentityRejected, which names the fix:
// DisableIdentity: true).
func UnaryServerInterceptor(c LockConf, store *redis.Redis) (grpc.UnaryServerInterceptor, error) {
	return UnaryServerInterceptorWithBackend(c, redislock.NewBackend(redislock.GoZeroStore(store), redislock.WithoutWakeups()))
}

// MustUnaryServerInterceptor is UnaryServerInterceptor that exits through
// logx.Must on a bad configuration, as go-zero's MustNew functions do.
func MustUnaryServerInterceptor(c LockConf, store *redis.Redis) grpc.UnaryServerInterceptor {
	i, err := UnaryServerInterceptor(c, store)
	logx.Must(err)
	return i
}

// UnaryServerInterceptorWithBackend is UnaryServerInterceptor for any lock
// backend: a go-redis client's (redislock.NewBackend(rdb,
// redislock.WithoutWakeups()): the interceptor's locks are only ever
// tried, never waited for, so their releases need not wake waiters),
// redislock.NewRedLockBackend over independent masters, or a lock on
// another service. Renewal (unless DisableRenew) and Fence are refused when
// its locks cannot renew or fence, replay mode when they cannot store a result
// (zerolock.Recorder: Redlock, etcd and ZooKeeper locks cannot), and limit
// mode when the backend makes no semaphores (zerolock.SemaphoreBackend:
// only a Redis store backend does), and rate mode when it cannot count
// calls against a rate (zerolock.RateBackend: only a Redis store backend
// can). A backend that is a zerolock.Checker
// is asked last whether it is set up to work: its misconfiguration is
// refused with an error wrapping ErrBadConfig and
// zerolock.ErrMisconfigured.
func UnaryServerInterceptorWithBackend(c LockConf, backend zerolock.Backend) (grpc.UnaryServerInterceptor, error) {
	c = withDefaults(c)
	if _, err := parseRejectCode(c.RejectCode); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	g := &guard.Guard{Backend: backend, FailOpen: c.FailOpen, Fence: c.Fence, Metrics: metrics,
		RecordKind: recordKind, MaxRecord: maxResultBytes, CallerKeys: callerKeys}
	rules := make(map[string]*rule, len(c.Rules))
	for _, r := range c.Rules {
		ru, err := compileRule(c, g, r)
		if err != nil {
			return nil, err
		}
		if _, dup := rules[ru.method]; dup {
			return nil, fmt.Errorf("%w: two rules for %s", ErrBadConfig, ru.method)
		}
		rules[ru.method] = ru
	}
	if err := g.Check(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	if err := g.CheckBackend(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	l := &locker{rules: rules, guard: g}
	return l.intercept, nil
}

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
	if c.Retain == 0 {
		c.Retain = DefaultRetain
	}
	return c
}

type locker struct {
	rules map[string]*rule
	guard *guard.Guard
}

func (l *locker) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo,
	handler grpc.UnaryHandler) (any, error) {
	ru, ok := l.rules[info.FullMethod]
	if !ok {
		return handler(ctx, req)
	}
	key, fingerprint, err := callKey(ctx, ru, req)
	if err != nil {
		l.guard.Count(ru.Label, guard.BadRequest)
		return nil, err
	}
	x := &exchange{ru: ru, ctx: ctx, req: req, handler: handler}
	l.guard.Serve(ctx, ru.Rule, key, fingerprint, x)
	return x.resp, x.err
}

// failed reports a handler error after which a retry must not be blocked.
func failed(err error) bool {
	switch status.Code(err) {
	case codes.Internal, codes.Unknown, codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}

// refusal is a refused call: code (the rule's RejectCode, Aborted by
// default) with msg and a RetryInfo of after. Never a code zrpc's breakers
// count as a failure of the server: parseRejectCode refuses them.
func refusal(code codes.Code, msg string, after time.Duration) error {
	st := status.New(code, msg)
	withInfo, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(after)})
	if err != nil {
		return st.Err()
	}
	return withInfo.Err()
}

// callKey derives the rule's key from the call, and in replay mode the
// call's fingerprint, or returns the status error the call is answered
// with: InvalidArgument for a missing or repeated value, Internal for a
// rule that does not fit the request.
func callKey(ctx context.Context, ru *rule, req any) (key string, fingerprint guard.Fingerprint, err error) {
	var (
		msg              protoreflect.Message
		fields, fpFields map[int]*fieldPath
	)
	if ru.needsMessage() {
		m, ok := req.(proto.Message)
		if !ok {
			return "", fingerprint, status.Errorf(codes.Internal, "zerolock: rule %s: request %T is not a protobuf message", ru.method, req)
		}
		msg = m.ProtoReflect()
		if fields, fpFields, err = ru.fieldsFor(msg.Descriptor()); err != nil {
			logx.WithContext(ctx).Errorf("zerolock: %v", err)
			return "", fingerprint, status.Error(codes.Internal, err.Error())
		}
	}

	hs := keyspec.NewHasher()
	if err := addSpecs(ctx, hs, ru.specs, fields, msg); err != nil {
		hs.Discard()
		return "", fingerprint, err
	}
	key = ru.Key(hs)
	if ru.Policy.Replay {
		fingerprint, err = callFingerprint(ctx, ru, fpFields, msg)
	}
	return key, fingerprint, err
}

// addSpecs adds the values of specs, read from the call, to hs. fields
// are the compiled paths of its field: specs, msg the request.
func addSpecs(ctx context.Context, hs *keyspec.Hasher, specs []keyspec.Spec, fields map[int]*fieldPath,
	msg protoreflect.Message) error {
	for i, s := range specs {
		var err error
		switch s.Source {
		case sourceField:
			err = fields[i].add(hs, msg)
		case sourceMetadata:
			err = addMetadata(ctx, hs, s.Name)
		case sourceCtx:
			var present bool
			present, err = hs.AddValue(ctx.Value(s.Name))
			if err == nil && !present {
				err = errMissing
			}
		case sourcePeer:
			p, ok := peer.FromContext(ctx)
			if !ok || p.Addr == nil {
				err = errMissing
			} else {
				hs.AddString(keyspec.String, keyspec.HostOnly(p.Addr.String()))
			}
		}
		if err == errMissing {
			return status.Errorf(codes.InvalidArgument, "zerolock: missing required %s", s.Raw)
		}
		if err != nil {
			return status.Errorf(codes.InvalidArgument, "zerolock: invalid %s: %v", s.Raw, err)
		}
	}
	return nil
}

// errAmbiguous marks metadata given more than once.
var errAmbiguous = errors.New("given more than once")

func addMetadata(ctx context.Context, hs *keyspec.Hasher, name string) error {
	// ValueFromIncomingContext copies one key's values, where
	// FromIncomingContext would copy the whole metadata on every call.
	values := metadata.ValueFromIncomingContext(ctx, name)
	switch {
	case len(values) > 1:
		return errAmbiguous
	case len(values) == 0 || values[0] == "":
		return errMissing
	}
	hs.AddString(keyspec.String, values[0])
	return nil
}
