package main

import (
	"strings"
	"testing"

	"github.com/zeromicro/go-zero/tools/goctl/api/spec"
	apiparser "github.com/zeromicro/go-zero/tools/goctl/pkg/parser/api/parser"
)

// parseAPI parses an .api file with goctl's parser, as goctl's plugin
// package does for the plugin.
func parseAPI(t *testing.T, name string) *spec.ApiSpec {
	t.Helper()
	api, err := apiparser.Parse(name, "")
	if err != nil {
		t.Fatalf("goctl cannot parse %s: %v", name, err)
	}
	return api
}

// routeOf returns the route of testdata/shop.api with the handler name.
func routeOf(t *testing.T, api *spec.ApiSpec, handler string) route {
	t.Helper()
	for _, g := range api.Service.Groups {
		for _, r := range g.Routes {
			if r.Handler == handler {
				return route{path: fullPath(g.Annotation.Properties[spec.RoutePrefixKey], r.Path),
					jwt: g.Annotation.Properties[jwtKey] != "", request: r.RequestType, types: namedTypes(api)}
			}
		}
	}
	t.Fatalf("no handler %s", handler)
	return route{}
}

// TestCheckKeys: each key is parsed as the middleware parses it and
// checked against the route's path, request type and group.
func TestCheckKeys(t *testing.T) {
	api := parseAPI(t, "testdata/shop.api")
	order := routeOf(t, api, "CreateOrder") // POST /v1/orders/:id, jwt
	search := routeOf(t, api, "Search")     // GET /search, no jwt
	ping := routeOf(t, api, "Ping")         // no request type
	for _, tc := range []struct {
		key  string
		rt   route
		want string // in the problem; "" for none
	}{
		{"json:orderId", order, ""},
		{"json:items", order, ""},
		{"json:items.0.sku", order, ""},
		{"json:items.12.count", order, ""},
		{"json:ship.city", order, ""},
		{"json:meta.anything", order, ""},
		{"json:extra.a.b.c", order, ""},
		{"json:tags.1", order, ""},
		{"json:tenantId", order, ""}, // from the embedded Tenant
		{"json:inner.code", order, ""},
		{"json:orderid", order, `the request type OrderReq has no json field "orderid" (its json fields: Note, extra, inner, items, meta, orderId, ship, tags, tenantId)`},
		{"json:Note", order, ""},
		{"json:Secret", order, `no json field "Secret"`},
		{"json:Channel", order, `no json field "Channel"`},
		{"json:items.sku", order, `json:items is an array ([]Item): the next segment must be an index, such as 0, not "sku"`},
		{"json:items.0.name", order, `json:items.0 (Item) has no json field "name" (its json fields: count, sku)`},
		{"json:ship.zip", order, `json:ship (Address) has no json field "zip"`},
		{"json:orderId.x", order, `json:orderId is of type string, which has no member "x"`},
		{"json:inner.x", order, `json:inner (its nested struct) has no json field "x"`},
		{"json:a..b", order, "malformed key spec"},
		{"json:q", ping, "the route has no request type"},
		{"path:id", order, ""},
		{"path:ID", order, "the path /v1/orders/:id has no :ID variable (its variables: id)"},
		{"path:id", search, "the path /search has no :id variable"},
		{"form:channel", order, ""},
		{"form:q", search, ""},
		{"query:page", search, ""},
		{"query:size", search, `SearchReq declares no field with the form tag "size"; its form fields: page, q`},
		{"form:orderId", order, `declares no field with the form tag "orderId"`},
		{"form:q", ping, "no request type"},
		{"claim:userId", order, ""},
		{"claim:userId", search, "the route's group has no jwt:"},
		{"claim:sub", order, "standard claims"},
		{"header:Idempotency-Key", ping, ""},
		{"header:X Id", ping, `"X Id" is not a valid header name`},
		{"header:", ping, "needs a name"},
		{"ip", ping, ""},
		{"body", ping, ""},
		{"cookie:sid", ping, "unknown key source"},
	} {
		t.Run(tc.key, func(t *testing.T) {
			_, problems := checkKeys("lock", []string{tc.key}, tc.rt)
			switch {
			case tc.want == "" && len(problems) > 0:
				t.Fatalf("problems %v, want none", problems)
			case tc.want != "" && (len(problems) != 1 || !strings.Contains(problems[0].msg, tc.want)):
				t.Fatalf("problems %+v, want one containing %q", problems, tc.want)
			case tc.want != "" && problems[0].property != "lock":
				t.Fatalf("problem on %q, want lock", problems[0].property)
			}
		})
	}
}

// TestReplayNamesCaller: a replay rule without a key that names its
// caller is refused, in the middleware's words, unless lockSharedKeys.
func TestReplayNamesCaller(t *testing.T) {
	api := parseAPI(t, "testdata/shop.api")
	order := routeOf(t, api, "CreateOrder")
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"lock": "header:Idempotency-Key", "lockMode": "replay"}, "none of this rule's keys names the caller"},
		{map[string]string{"lock": "header:Idempotency-Key", "lockMode": "replay", "lockSharedKeys": "true"}, ""},
		{map[string]string{"lock": "header:Idempotency-Key,claim:userId", "lockMode": "replay"}, ""},
		{map[string]string{"lock": "header:Idempotency-Key,header:authorization", "lockMode": "replay"}, ""},
		{map[string]string{"lock": "header:Idempotency-Key", "lockMode": "window"}, ""},
	} {
		_, problems := ruleOf(tc.props, rule{}, order)
		switch {
		case tc.want == "" && len(problems) > 0:
			t.Errorf("%v: problems %v", tc.props, problems)
		case tc.want != "" && (len(problems) != 1 || !strings.Contains(problems[0].msg, tc.want) || problems[0].property != "lockMode"):
			t.Errorf("%v: problems %+v, want one on lockMode containing %q", tc.props, problems, tc.want)
		}
	}
}
