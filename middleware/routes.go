package middleware

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/rest"
)

// CheckRoutes checks every rule of m against the routes registered on
// server, so that a mistyped Path (/order for /orders) or Method fails at
// start-up instead of silently locking nothing. Call it after the routes
// are registered (after goctl's handler.RegisterHandlers) and before
// server.Start. Rules with SkipRouteCheck, for routes added later, are not
// checked. The error wraps ErrBadConfig and names each rule that matches
// no route, with the routes of its method. A middleware whose rules were
// never checked says so at its first request.
func (m *LockMiddleware) CheckRoutes(server *rest.Server) error {
	routes := make(map[string][]string) // method -> patterns
	served := make(map[string]bool)     // "POST /orders"
	for _, r := range server.Routes() {
		p := path.Clean(r.Path)
		routes[r.Method] = append(routes[r.Method], p)
		served[r.Method+" "+p] = true
	}
	var errs []error
	for _, r := range m.conf.Rules {
		if r.SkipRouteCheck || served[r.Method+" "+path.Clean(r.Path)] {
			continue
		}
		known := routes[r.Method]
		sort.Strings(known)
		have := "the server has no " + r.Method + " routes"
		if len(known) > 0 {
			have = r.Method + " routes: " + strings.Join(known, ", ")
		}
		errs = append(errs, fmt.Errorf("%w: rule %s %s matches no route of the server (%s); "+
			"fix its Method or Path, or set SkipRouteCheck: true on it if the route is added later",
			ErrBadConfig, r.Method, r.Path, have))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	m.checked.Store(true)
	return nil
}

// MustCheckRoutes is CheckRoutes that exits through logx.Must when a rule
// matches no route.
func (m *LockMiddleware) MustCheckRoutes(server *rest.Server) {
	logx.Must(m.CheckRoutes(server))
}

// warnIfUnchecked logs, once per middleware, rules that are served without
// CheckRoutes having run: a mistyped Path would lock nothing.
func (m *LockMiddleware) warnIfUnchecked() {
	if len(m.conf.Rules) > 0 && !m.checked.Load() {
		logx.Error("zerolock: warning: the lock rules were never checked against the server's routes, " +
			"so a mistyped Path locks nothing; call MustCheckRoutes(server) on the middleware after registering the routes")
	}
}
