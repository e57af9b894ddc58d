package main

import (
	"path"
	"strings"
	"time"
)

// rule is one route's entry of Lock.Rules (middleware.LockRule), as the
// route's @doc properties declare it. Durations keep the spelling of the
// .api file; zero values are left out of the YAML.
type rule struct {
	Method string // upper case, as net/http spells it
	Path   string // the group's prefix applied, as go-zero registers it

	Keys             []string
	Mode             string
	Expire           string
	Permits          int
	Quota            int
	Period           string
	RateLimitHeaders bool
	Retain           string
	DisableRenew     bool
	MaxHold          string
	MaxResponseBytes int64
	Fingerprint      []string
	RejectCode       int
	Message          string
	Wait             string
	SharedKeys       bool
	SkipRouteCheck   bool

	// The parsed durations, for the checks that compare them.
	expire, maxHold time.Duration
	// unguarded: the route's group names no middleware, so unless the
	// service installs the middleware for every route (server.Use), no
	// request to it meets the rule.
	unguarded string
}

// fullPath is the path go-zero registers a route under: goctl turns a
// group's prefix into rest.WithPrefix(path.Join("/", prefix)), which joins
// it to the route's path with path.Join.
func fullPath(prefix, route string) string {
	prefix = strings.TrimSpace(strings.ReplaceAll(prefix, `"`, ""))
	if prefix == "" {
		return route
	}
	return path.Join(path.Join("/", prefix), route)
}
