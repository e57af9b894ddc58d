package interceptor

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/zeromicro/go-zero/core/logx"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zerolock/zerolock/internal/guard"
	"github.com/zerolock/zerolock/internal/keyspec"
)

// ErrBadConfig is wrapped by every configuration error of the interceptor:
// an unknown key source, a malformed spec or method name, a method that no
// linked service declares (see LockRule.SkipMethodCheck) or that the
// server does not serve (see CheckServed), a field path that the method's
// request message does not have.
var ErrBadConfig = errors.New("interceptor: bad lock configuration")

// The key sources of a gRPC call.
const (
	sourceField    = "field"
	sourceMetadata = "metadata"
	sourceCtx      = "ctx"
	sourcePeer     = "peer"
)

var grpcSources = keyspec.Sources{
	sourceField:    keyspec.DottedPath,
	sourceMetadata: keyspec.Name,
	sourceCtx:      keyspec.Name,
	sourcePeer:     keyspec.NoName,
}

// rule is a validated LockRule.
type rule struct {
	method    string
	specs     []keyspec.Spec
	policy    guard.Policy
	hasFields bool

	// fields are the compiled field: paths, by spec index. They are
	// compiled at start-up when the method's descriptor is registered,
	// otherwise from the first request's descriptor.
	once      sync.Once
	input     protoreflect.MessageDescriptor
	fields    map[int]*fieldPath
	fieldsErr error
}

func compileRule(c LockConf, r LockRule) (*rule, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: rule %s: %s", ErrBadConfig, r.Method, fmt.Sprintf(format, args...))
	}
	service, method, ok := splitMethod(r.Method)
	if !ok {
		return nil, bad("method must be /package.Service/Method")
	}
	specs, err := keyspec.ParseAll(r.Keys, grpcSources)
	if err != nil {
		return nil, bad("%v", err)
	}
	hasFields, perCaller := false, false
	for _, s := range specs {
		hasFields = hasFields || s.Source == sourceField
		perCaller = perCaller || s.Source == sourceMetadata || s.Source == sourceCtx || s.Source == sourcePeer
		if s.Source == sourceMetadata && s.Name != strings.ToLower(s.Name) {
			return nil, bad("metadata key %q must be lower case, as gRPC sends it", s.Name)
		}
	}
	policy, err := guard.ResolvePolicy(c.Expire, c.Mode, r.Expire, r.Mode)
	if err != nil {
		return nil, bad("%v", err)
	}
	ru := &rule{method: r.Method, specs: specs, policy: policy, hasFields: hasFields}
	md, err := linkedMethod(service, method)
	switch {
	case err == nil:
		if err := ru.compileFields(md.Input()); err != nil {
			return nil, bad("%v", err)
		}
		ru.once.Do(func() {})
	case !r.SkipMethodCheck || errors.Is(err, errStreaming):
		// A streaming method is linked and known: SkipMethodCheck, for
		// methods that are not, cannot make a unary rule for it useful.
		return nil, bad("%v", err)
	}
	if !perCaller {
		warnShared(r.Method)
	}
	return ru, nil
}

// warnShared logs a rule whose key has no per-caller part, at error level
// because go-zero has no warning level and services often log errors only.
func warnShared(method string) {
	logx.Errorf("zerolock: warning: lock rule %s has no metadata:, ctx: or peer key, "+
		"so calls from different callers with the same field values block each other; "+
		"add the caller's identity (ctx:userId, metadata:x-user-id) unless those values are unique to one caller", method)
}

// splitMethod splits /package.Service/Method.
func splitMethod(full string) (service, method string, ok bool) {
	rest, ok := strings.CutPrefix(full, "/")
	if !ok {
		return "", "", false
	}
	service, method, ok = strings.Cut(rest, "/")
	if !ok || service == "" || method == "" || strings.Contains(method, "/") {
		return "", "", false
	}
	return service, method, true
}

func (ru *rule) compileFields(md protoreflect.MessageDescriptor) error {
	fields := make(map[int]*fieldPath)
	for i, s := range ru.specs {
		if s.Source != sourceField {
			continue
		}
		fp, err := compileFieldPath(md, s)
		if err != nil {
			return err
		}
		fields[i] = fp
	}
	ru.input, ru.fields = md, fields
	return nil
}

// fieldsFor returns the compiled paths for a request of descriptor md,
// compiling them on the first call when start-up could not.
func (ru *rule) fieldsFor(md protoreflect.MessageDescriptor) (map[int]*fieldPath, error) {
	ru.once.Do(func() {
		if err := ru.compileFields(md); err != nil {
			ru.fieldsErr = fmt.Errorf("%w: rule %s: %v", ErrBadConfig, ru.method, err)
		}
	})
	if ru.fieldsErr != nil {
		return nil, ru.fieldsErr
	}
	if ru.input != nil && ru.input.FullName() != md.FullName() {
		return nil, fmt.Errorf("%w: rule %s: request is %s, the rule was checked against %s",
			ErrBadConfig, ru.method, md.FullName(), ru.input.FullName())
	}
	return ru.fields, nil
}
