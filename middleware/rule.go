package middleware

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/zerolock/zerolock/internal/guard"
	"github.com/zerolock/zerolock/internal/keyspec"
)

// The key sources of an HTTP request.
const (
	sourcePath   = "path"
	sourceQuery  = "query"
	sourceForm   = "form"
	sourceHeader = "header"
	sourceJSON   = "json"
	sourceClaim  = "claim"
	sourceIP     = "ip"
	sourceBody   = "body"
)

var httpSources = keyspec.Sources{
	sourcePath:   keyspec.Name,
	sourceQuery:  keyspec.Name,
	sourceForm:   keyspec.Name,
	sourceHeader: keyspec.Name,
	sourceJSON:   keyspec.DottedPath,
	sourceClaim:  keyspec.Name,
	sourceIP:     keyspec.NoName,
	sourceBody:   keyspec.NoName,
}

// perClientSources identify who sent a request. A rule without one of
// them locks a route for everybody at once, which is rarely meant.
var perClientSources = map[string]bool{sourceClaim: true, sourceIP: true, sourceHeader: true}

// callerKeys names the keys that name a request's caller, for the refusal
// of a replay rule without one (guard.Compile): see namesCaller.
const callerKeys = "claim:userId (a claim go-zero's JWT puts in the context) or header:Authorization"

// namesCaller reports whether s names the request's caller, so that a
// replay rule keyed on it only ever replays a response to the caller that
// made the first request: a claim go-zero's JWT middleware verified, or
// the Authorization header, the credential itself. An ip, another header
// or a body value is chosen by, or shared between, callers.
func namesCaller(s keyspec.Spec) bool {
	return s.Source == sourceClaim || s.Source == sourceHeader && strings.EqualFold(s.Name, "Authorization")
}

// standardClaims are the JWT claims go-zero's JWT middleware does not put
// in the request context: a claim: key naming one would be missing from
// every request.
var standardClaims = map[string]bool{"aud": true, "exp": true, "jti": true, "iat": true, "iss": true, "nbf": true, "sub": true}

var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
	http.MethodConnect: true, http.MethodTrace: true,
}

// rule is a validated LockRule, ready to serve. Its guard.Rule holds the
// label ("POST /orders", for metrics and logs), the policy and the key's
// namespace.
type rule struct {
	*guard.Rule
	method    string
	path      string
	specs     []keyspec.Spec
	needsBody bool // json: or body: keys, or replay's default fingerprint
	needsForm bool // form: or query: keys, which also read url-encoded and multipart bodies
	perClient bool
	proxyHops int // LockConf.TrustedProxyHops, for the ip key

	// rejectCode is the status of a refused duplicate, and message, when
	// set, its message and limit mode's: the rule's, else the conf's.
	rejectCode int
	message    string

	// Replay mode: the fingerprint's specs (nil: the whole request, see
	// fingerprint.go) and the largest response body kept.
	fingerprint []keyspec.Spec
	maxResponse int64

	// Rate mode: whether admitted requests get the rate headers too, and
	// the RateLimit-Policy field, which names the policy as the rate
	// headers do (see ratelimit.go).
	rateHeaders bool
	rate        rateFields
}

// compileRule validates r against the defaults in c and g's settings and
// backend.
func compileRule(c LockConf, g *guard.Guard, r LockRule) (*rule, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: rule %s %s: %s", ErrBadConfig, r.Method, r.Path, fmt.Sprintf(format, args...))
	}
	if !methods[r.Method] {
		return nil, bad("unknown method %q (use upper case, such as POST)", r.Method)
	}
	if !strings.HasPrefix(r.Path, "/") {
		return nil, bad("path must start with /")
	}
	specs, err := keyspec.ParseAll(r.Keys, httpSources)
	if err != nil {
		return nil, bad("%v", err)
	}
	var replayOnly []string
	if len(r.Fingerprint) > 0 {
		replayOnly = append(replayOnly, "Fingerprint")
	}
	if r.MaxResponseBytes != 0 {
		replayOnly = append(replayOnly, "MaxResponseBytes")
	}
	named := slices.ContainsFunc(specs, namesCaller)
	lock, err := g.Compile(r.Method+" "+r.Path, []string{c.Prefix, "http", r.Method, r.Path},
		guard.Settings{Expire: c.Expire, Mode: c.Mode, Permits: c.Permits, Retain: c.Retain,
			Renew: c.Renew, DisableRenew: c.DisableRenew, MaxHold: c.MaxHold, Wait: c.Wait,
			Quota: c.Quota, Period: c.Period, SharedKeys: c.SharedKeys},
		guard.Settings{Expire: r.Expire, Mode: r.Mode, Permits: r.Permits, Retain: r.Retain,
			DisableRenew: r.DisableRenew, MaxHold: r.MaxHold, Wait: r.Wait, Quota: r.Quota, Period: r.Period,
			SharedKeys: r.SharedKeys, NamesCaller: named, RejectCode: r.RejectCode != 0},
		replayOnly...)
	if err != nil {
		return nil, bad("%v", err)
	}
	if err := checkRate(lock, r); err != "" {
		return nil, bad("%s", err)
	}
	ru := &rule{Rule: lock, method: r.Method, path: r.Path, specs: specs, proxyHops: c.TrustedProxyHops,
		rejectCode: c.RejectCode, message: c.Message}
	if lock.Policy.Quota > 0 {
		ru.rateHeaders = c.RateLimitHeaders || r.RateLimitHeaders
		ru.rate = newRateFields(lock.Label, lock.Policy)
	}
	if r.RejectCode != 0 {
		if err := checkRejectCode(r.RejectCode); err != "" {
			return nil, bad("%s", err)
		}
		ru.rejectCode = r.RejectCode
	}
	if r.Message != "" {
		ru.message = r.Message
	}
	vars := pathVars(r.Path)
	for _, s := range specs {
		if err := ru.use(s, vars); err != "" {
			return nil, bad("key %s", err)
		}
		ru.perClient = ru.perClient || perClientSources[s.Source]
	}
	if err := ru.compileReplay(c, r, vars); err != "" {
		return nil, bad("%s", err)
	}
	return ru, nil
}

// checkRejectCode returns what is wrong with a RejectCode, or "": it must
// be a 4xx, so that a duplicate is never counted as a failure of the
// server (go-zero's breaker counts every 5xx).
func checkRejectCode(code int) string {
	if code < 400 || code > 499 {
		return fmt.Sprintf("RejectCode %d must be a 4xx status, such as 409 (the default) or 425 for dtm, "+
			"since go-zero's breaker counts a 5xx as a failure of the route", code)
	}
	return ""
}

// messageOr is the rule's Message, or def when it has none.
func (ru *rule) messageOr(def string) string {
	if ru.message != "" {
		return ru.message
	}
	return def
}

// use checks that spec can be read on the rule's route and notes which
// parts of the request it reads; it returns what is wrong, or "".
func (ru *rule) use(s keyspec.Spec, vars map[string]bool) string {
	switch s.Source {
	case sourcePath:
		if !vars[s.Name] {
			return fmt.Sprintf("%q names no :%s variable of the path", s.Raw, s.Name)
		}
	case sourceJSON, sourceBody:
		ru.needsBody = true
	case sourceForm, sourceQuery:
		ru.needsForm = true
	case sourceClaim:
		if standardClaims[s.Name] {
			return fmt.Sprintf("%q: go-zero's JWT middleware keeps standard claims out of the context", s.Raw)
		}
	}
	return ""
}

// compileReplay applies replay mode's settings of the transport (Retain
// and the refusal of replay settings in other modes are guard.Compile's);
// it returns what is wrong, or "".
func (ru *rule) compileReplay(c LockConf, r LockRule, vars map[string]bool) string {
	if !ru.Policy.Replay {
		return ""
	}
	ru.maxResponse = c.MaxResponseBytes
	if r.MaxResponseBytes != 0 {
		ru.maxResponse = r.MaxResponseBytes
	}
	if ru.maxResponse <= 0 {
		return fmt.Sprintf("MaxResponseBytes %d must be positive", ru.maxResponse)
	}
	if len(r.Fingerprint) == 0 {
		ru.needsBody = true // the default fingerprint covers the body
		return ""
	}
	specs, err := keyspec.ParseAll(r.Fingerprint, httpSources)
	if err != nil {
		return fmt.Sprintf("Fingerprint: %v", err)
	}
	for _, s := range specs {
		if err := ru.use(s, vars); err != "" {
			return "Fingerprint " + err
		}
	}
	ru.fingerprint = specs
	return ""
}

// pathVars returns the :name variables of a go-zero route pattern.
func pathVars(pattern string) map[string]bool {
	vars := make(map[string]bool)
	for _, seg := range strings.Split(pattern, "/") {
		if strings.HasPrefix(seg, ":") && len(seg) > 1 {
			vars[seg[1:]] = true
		}
	}
	return vars
}
