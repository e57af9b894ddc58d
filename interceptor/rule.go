package interceptor

import (
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/zeromicro/go-zero/core/logx"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/zerolock/zerolock/internal/guard"
	"github.com/zerolock/zerolock/internal/keyspec"
)

// ErrBadConfig is wrapped by every configuration error of the interceptor:
// an unknown key source, a malformed spec or method name, a method that no
// linked service declares (see LockRule.SkipMethodCheck) or that the
// server does not serve (see CheckServed), a field path that the method's
// request message does not have, Fence in replay or limit mode, a replay
// backend that cannot store results, Retain or Fingerprint on a rule that
// is not in replay mode, limit mode without Permits or on a backend that
// makes no semaphores, Permits on a rule that is not in limit mode, a
// replay rule none of whose keys names the caller (see LockConf.SharedKeys),
// a RejectCode that names no code, OK, or a code go-zero's breakers count
// as a failure of the server, rate mode without a Quota of at least 1 and
// a Period of at least 1ms or on a backend that cannot count requests
// against a rate, Quota or Period on a rule in another mode, and Fence,
// Expire, DisableRenew or MaxHold with a rate rule.
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

// rule is a validated LockRule. Its guard.Rule holds the label (the
// method), the policy and the key's namespace.
type rule struct {
	*guard.Rule
	method    string
	specs     []keyspec.Spec
	hasFields bool

	// rejectCode is the code of a refused duplicate, and message, when
	// set, its message and limit and rate mode's: the rule's, else the
	// conf's. rateCode is the code of a call over a rate rule's rate: the
	// rule's own RejectCode, else Aborted.
	rejectCode codes.Code
	rateCode   codes.Code
	message    string

	// In replay mode: the Fingerprint specs (none for the whole request
	// message), and the response type when the method is linked, so that
	// a stored result of another type is never replayed.
	fingerprint []keyspec.Spec
	fpWhole     bool // the fingerprint is the whole request message
	fpHasFields bool
	output      protoreflect.FullName

	// fields and fpFields are the compiled field: paths of specs and
	// fingerprint, by spec index. They are compiled at start-up when the
	// method's descriptor is registered, otherwise from the first
	// request's descriptor.
	once      sync.Once
	input     protoreflect.MessageDescriptor
	fields    map[int]*fieldPath
	fpFields  map[int]*fieldPath
	fieldsErr error
}

// compileRule validates r against the defaults in c and g's settings and
// backend.
func compileRule(c LockConf, g *guard.Guard, r LockRule) (*rule, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: rule %s: %s", ErrBadConfig, r.Method, fmt.Sprintf(format, args...))
	}
	service, method, ok := splitMethod(r.Method)
	if !ok {
		return nil, bad("method must be /package.Service/Method")
	}
	specs, err := parseSpecs(r.Keys)
	if err != nil {
		return nil, bad("%v", err)
	}
	hasFields, perCaller, named := false, false, false
	for _, s := range specs {
		hasFields = hasFields || s.Source == sourceField
		perCaller = perCaller || s.Source == sourceMetadata || s.Source == sourceCtx || s.Source == sourcePeer
		named = named || namesCaller(s)
	}
	var replayOnly []string
	if len(r.Fingerprint) > 0 {
		replayOnly = append(replayOnly, "Fingerprint")
	}
	lock, err := g.Compile(r.Method, []string{c.Prefix, "grpc", r.Method},
		guard.Settings{Expire: c.Expire, Mode: c.Mode, Permits: c.Permits, Retain: c.Retain,
			Renew: c.Renew, DisableRenew: c.DisableRenew, MaxHold: c.MaxHold, Wait: c.Wait,
			Quota: c.Quota, Period: c.Period, SharedKeys: c.SharedKeys},
		guard.Settings{Expire: r.Expire, Mode: r.Mode, Permits: r.Permits, Retain: r.Retain,
			DisableRenew: r.DisableRenew, MaxHold: r.MaxHold, Wait: r.Wait, Quota: r.Quota, Period: r.Period,
			SharedKeys: r.SharedKeys, NamesCaller: named, RejectCode: r.RejectCode != ""},
		replayOnly...)
	if err != nil {
		return nil, bad("%v", err)
	}
	ru := &rule{Rule: lock, method: r.Method, specs: specs, hasFields: hasFields, message: c.Message, rateCode: codes.Aborted}
	if ru.rejectCode, err = parseRejectCode(c.RejectCode); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	if r.RejectCode != "" {
		if ru.rejectCode, err = parseRejectCode(r.RejectCode); err != nil {
			return nil, bad("%v", err)
		}
		ru.rateCode = ru.rejectCode
	}
	if r.Message != "" {
		ru.message = r.Message
	}
	if err := ru.compileReplay(r); err != nil {
		return nil, bad("%v", err)
	}
	md, err := linkedMethod(service, method)
	switch {
	case err == nil:
		if err := ru.compileFields(md.Input()); err != nil {
			return nil, bad("%v", err)
		}
		ru.output = md.Output().FullName()
		ru.once.Do(func() {})
	case !r.SkipMethodCheck || errors.Is(err, errStreaming):
		// A streaming method is linked and known: SkipMethodCheck, for
		// methods that are not, cannot make a unary rule for it useful.
		return nil, bad("%v", err)
	}
	if !perCaller && !lock.Shared {
		warnShared(r.Method, lock.Policy.Quota > 0)
	}
	return ru, nil
}

// messageOr is the rule's Message, or def when it has none.
func (ru *rule) messageOr(def string) string {
	if ru.message != "" {
		return ru.message
	}
	return def
}

// parseSpecs parses a rule's Keys or Fingerprint.
func parseSpecs(raws []string) ([]keyspec.Spec, error) {
	specs, err := keyspec.ParseAll(raws, grpcSources)
	if err != nil {
		return nil, err
	}
	for _, s := range specs {
		if s.Source == sourceMetadata && s.Name != strings.ToLower(s.Name) {
			return nil, fmt.Errorf("metadata key %q must be lower case, as gRPC sends it", s.Name)
		}
	}
	return specs, nil
}

// compileReplay parses a replay rule's Fingerprint (Retain, and the
// refusal of replay settings in other modes, are guard.Compile's).
func (ru *rule) compileReplay(r LockRule) error {
	if !ru.Policy.Replay {
		return nil
	}
	fingerprint, err := parseSpecs(r.Fingerprint)
	if err != nil {
		return fmt.Errorf("Fingerprint: %v", err)
	}
	ru.fingerprint, ru.fpWhole = fingerprint, len(fingerprint) == 0
	for _, s := range fingerprint {
		ru.fpHasFields = ru.fpHasFields || s.Source == sourceField
	}
	return nil
}

// callerKeys names the keys that name a call's caller, for the refusal of
// a replay rule without one (guard.Compile): see namesCaller.
const callerKeys = "a ctx: key (the caller an auth interceptor put in the context, ctx:userId) or metadata:authorization"

// namesCaller reports whether s names the call's caller, so that a replay
// rule keyed on it only ever replays a result to the caller that made the
// first call: a value the service's auth put in the context, or the
// authorization metadata, the credential itself. A peer address, other
// metadata or a field is chosen by, or shared between, callers.
func namesCaller(s keyspec.Spec) bool {
	return s.Source == sourceCtx || s.Source == sourceMetadata && s.Name == "authorization"
}

// warnShared logs a rule whose key has no per-caller part (unless its keys
// are shared on purpose, SharedKeys), at error level because go-zero has
// no warning level and services often log errors only.
func warnShared(method string, rate bool) {
	if rate {
		logx.Errorf("zerolock: warning: rate rule %s has no metadata:, ctx: or peer key, "+
			"so callers with the same field values share one rate and use up each other's; "+
			"add the caller's identity (ctx:userId, metadata:x-user-id) unless those values are unique to one caller, "+
			"or set SharedKeys: true if the method's rate is meant for all callers at once", method)
		return
	}
	logx.Errorf("zerolock: warning: lock rule %s has no metadata:, ctx: or peer key, "+
		"so calls from different callers with the same field values block each other; "+
		"add the caller's identity (ctx:userId, metadata:x-user-id) unless those values are unique to one caller, "+
		"or set SharedKeys: true if its keys are shared by different callers on purpose", method)
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
	fields, err := compileSpecFields(md, ru.specs)
	if err != nil {
		return err
	}
	fpFields, err := compileSpecFields(md, ru.fingerprint)
	if err != nil {
		return fmt.Errorf("Fingerprint: %v", err)
	}
	ru.input, ru.fields, ru.fpFields = md, fields, fpFields
	return nil
}

// compileSpecFields compiles the field: specs among specs, by index.
func compileSpecFields(md protoreflect.MessageDescriptor, specs []keyspec.Spec) (map[int]*fieldPath, error) {
	fields := make(map[int]*fieldPath)
	for i, s := range specs {
		if s.Source != sourceField {
			continue
		}
		fp, err := compileFieldPath(md, s)
		if err != nil {
			return nil, err
		}
		fields[i] = fp
	}
	return fields, nil
}

// needsMessage reports whether the call's key or fingerprint reads the
// request message.
func (ru *rule) needsMessage() bool {
	return ru.hasFields || ru.Policy.Replay && (ru.fpWhole || ru.fpHasFields)
}

// fieldsFor returns the compiled paths of the keys and of the fingerprint
// for a request of descriptor md, compiling them on the first call when
// start-up could not.
func (ru *rule) fieldsFor(md protoreflect.MessageDescriptor) (keys, fingerprint map[int]*fieldPath, err error) {
	ru.once.Do(func() {
		if err := ru.compileFields(md); err != nil {
			ru.fieldsErr = fmt.Errorf("%w: rule %s: %v", ErrBadConfig, ru.method, err)
		}
	})
	if ru.fieldsErr != nil {
		return nil, nil, ru.fieldsErr
	}
	if ru.input != nil && ru.input.FullName() != md.FullName() {
		return nil, nil, fmt.Errorf("%w: rule %s: request is %s, the rule was checked against %s",
			ErrBadConfig, ru.method, md.FullName(), ru.input.FullName())
	}
	return ru.fields, ru.fpFields, nil
}
