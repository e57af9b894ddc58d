package middleware

import (
	"fmt"
	"net/http"
	"strings"
	"time"

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

// standardClaims are the JWT claims go-zero's JWT middleware does not put
// in the request context: a claim: key naming one would be missing from
// every request.
var standardClaims = map[string]bool{"aud": true, "exp": true, "jti": true, "iat": true, "iss": true, "nbf": true, "sub": true}

var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
	http.MethodConnect: true, http.MethodTrace: true,
}

// rule is a validated LockRule, ready to serve.
type rule struct {
	method    string
	path      string
	label     string // "POST /orders", for metrics and logs
	specs     []keyspec.Spec
	policy    guard.Policy
	needsBody bool // json: or body: keys, or replay's default fingerprint
	needsForm bool // form: or query: keys, which also read url-encoded and multipart bodies
	perClient bool
	proxyHops int // LockConf.TrustedProxyHops, for the ip key

	// Replay mode: the fingerprint's specs (nil: the whole request, see
	// fingerprint.go) and the largest response body kept.
	fingerprint []keyspec.Spec
	maxResponse int64
}

// compileRule validates r against the defaults in c.
func compileRule(c LockConf, r LockRule) (*rule, error) {
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
	policy, err := guard.ResolvePolicy(guard.Settings{Expire: c.Expire, Mode: c.Mode, Permits: c.Permits},
		guard.Settings{Expire: r.Expire, Mode: r.Mode, Permits: r.Permits})
	if err != nil {
		return nil, bad("%v", err)
	}
	ru := &rule{method: r.Method, path: r.Path, label: r.Method + " " + r.Path, specs: specs, policy: policy,
		proxyHops: c.TrustedProxyHops}
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

// compileReplay applies replay mode's settings, and refuses them on a rule
// in another mode, where they would silently do nothing; it returns what
// is wrong, or "".
func (ru *rule) compileReplay(c LockConf, r LockRule, vars map[string]bool) string {
	if !ru.policy.Replay {
		switch {
		case len(r.Fingerprint) > 0:
			return "Fingerprint is for replay mode only"
		case r.Retain != 0:
			return "Retain is for replay mode only"
		case r.MaxResponseBytes != 0:
			return "MaxResponseBytes is for replay mode only"
		}
		return ""
	}
	ru.policy.Retain, ru.maxResponse = c.Retain, c.MaxResponseBytes
	if r.Retain != 0 {
		ru.policy.Retain = r.Retain
	}
	if r.MaxResponseBytes != 0 {
		ru.maxResponse = r.MaxResponseBytes
	}
	switch {
	case ru.policy.Retain < time.Millisecond:
		return fmt.Sprintf("Retain %v must be at least 1ms", ru.policy.Retain)
	case ru.maxResponse <= 0:
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
