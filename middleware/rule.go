package middleware

import (
	"fmt"
	"net/http"
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
	needsBody bool // json: or body: keys
	needsForm bool // form: or query: keys, which also read url-encoded and multipart bodies
	perClient bool
	proxyHops int // LockConf.TrustedProxyHops, for the ip key
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
	policy, err := guard.ResolvePolicy(c.Expire, c.Mode, r.Expire, r.Mode)
	if err != nil {
		return nil, bad("%v", err)
	}
	ru := &rule{method: r.Method, path: r.Path, label: r.Method + " " + r.Path, specs: specs, policy: policy,
		proxyHops: c.TrustedProxyHops}
	vars := pathVars(r.Path)
	for _, s := range specs {
		switch s.Source {
		case sourcePath:
			if !vars[s.Name] {
				return nil, bad("key %q names no :%s variable of the path", s.Raw, s.Name)
			}
		case sourceJSON, sourceBody:
			ru.needsBody = true
		case sourceForm, sourceQuery:
			ru.needsForm = true
		case sourceClaim:
			if standardClaims[s.Name] {
				return nil, bad("key %q: go-zero's JWT middleware keeps standard claims out of the context", s.Raw)
			}
		}
		ru.perClient = ru.perClient || perClientSources[s.Source]
	}
	return ru, nil
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
