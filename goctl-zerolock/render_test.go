package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/middleware"
)

// TestRenderRules: the fields in their order, zero values left out, each
// line indented.
func TestRenderRules(t *testing.T) {
	got := renderRules([]rule{
		{Method: "POST", Path: "/orders", Keys: []string{"claim:userId", "json:orderId"}},
		{Method: "GET", Path: "/exports", Keys: []string{"claim:userId"}, Mode: "limit", Permits: 2, Expire: "30s",
			Message: "请勿重复提交", SkipRouteCheck: true},
		{Method: "POST", Path: "/login", Keys: []string{"ip"}, Mode: "rate", Quota: 5, Period: "1m", RateLimitHeaders: true},
		{Method: "DELETE", Path: "/all"},
	}, "    ")
	want := `    - Method: POST
      Path: /orders
      Keys: [claim:userId, json:orderId]
    - Method: GET
      Path: /exports
      Keys: [claim:userId]
      Mode: limit
      Expire: 30s
      Permits: 2
      Message: "请勿重复提交"
      SkipRouteCheck: true
    - Method: POST
      Path: /login
      Keys: [ip]
      Mode: rate
      Quota: 5
      Period: 1m
      RateLimitHeaders: true
    - Method: DELETE
      Path: /all
`
	if got != want {
		t.Fatalf("renderRules:\n%s\nwant\n%s", got, want)
	}
	if renderRules(nil, "  ") != "" {
		t.Fatal("no rules rendered as something")
	}
}

// TestScalarReadsBack: every string the plugin writes reads back as the
// same string through go-zero's conf loader, quoted or not.
func TestScalarReadsBack(t *testing.T) {
	for _, s := range []string{
		"claim:userId", "json:items.0.sku", "header:Idempotency-Key", "/orders/:id/pay", "24h", "1.5h", "500ms",
		"header:X-#!$%&'*+.^_`|~", "true", "No", "null", "~", "123", "1e3", "0x1f", "-", "a: b", "a #b", "[x]",
		"{x}", "x,y", "'q'", `"q"`, "请勿重复提交", "tab\there", "line\nbreak", "\u2028", " lead", "trail ", "", "key:",
		"@x", "`x`", "!x", "&x", "*x", "%x", "|x", ">x", "? x",
	} {
		var v struct{ Value string }
		doc := "Value: " + scalar(s) + "\n"
		if err := conf.LoadFromYamlBytes([]byte(doc), &v); err != nil {
			t.Errorf("%q written as %s: %v", s, doc, err)
			continue
		}
		if v.Value != s {
			t.Errorf("%q written as %s reads back as %q", s, doc, v.Value)
		}
		var list struct{ Values []string }
		doc = "Values: " + flowList([]string{s, s}) + "\n"
		if err := conf.LoadFromYamlBytes([]byte(doc), &list); err != nil || !reflect.DeepEqual(list.Values, []string{s, s}) {
			t.Errorf("%q in a flow list, %s, reads back as %q, %v", s, doc, list.Values, err)
		}
	}
}

// TestRenderedRulesLoadIntoMiddleware: rules with every field, rendered,
// load through go-zero's conf into middleware.LockConf as the rules they
// are, and the middleware accepts them.
func TestRenderedRulesLoadIntoMiddleware(t *testing.T) {
	rules := []rule{
		{Method: "POST", Path: "/v1/orders/:id/pay", Keys: []string{"claim:userId", "header:Idempotency-Key", "path:id"},
			Mode: "replay", Expire: "10s", Retain: "1h", MaxHold: "2m", MaxResponseBytes: 65536,
			Fingerprint: []string{"json:orderId", "json:items.0.sku"}, RejectCode: 425,
			Message: `请勿重复提交, "again": later`, Wait: "2s", SharedKeys: true, SkipRouteCheck: true},
		{Method: "GET", Path: "/search", Keys: []string{"ip", "query:q", "form:page", "body"}, Mode: "limit", Permits: 3},
		{Method: "POST", Path: "/rebuild/:id", Keys: []string{"path:id"}, Mode: "window", DisableRenew: true},
		{Method: "POST", Path: "/login", Keys: []string{"ip", "json:userId"}, Mode: "rate", Quota: 5, Period: "1m30s",
			RateLimitHeaders: true, Message: "登录太频繁"},
	}
	yaml := "Lock:\n  Rules:\n" + renderRules(rules, "    ")
	var c struct{ Lock middleware.LockConf }
	if err := conf.LoadFromYamlBytes([]byte(yaml), &c); err != nil {
		t.Fatalf("%v in\n%s", err, yaml)
	}
	want := []middleware.LockRule{
		{Method: "POST", Path: "/v1/orders/:id/pay", Keys: []string{"claim:userId", "header:Idempotency-Key", "path:id"},
			Mode: "replay", Expire: 10 * time.Second, Retain: time.Hour, MaxHold: 2 * time.Minute, MaxResponseBytes: 65536,
			Fingerprint: []string{"json:orderId", "json:items.0.sku"}, RejectCode: 425,
			Message: `请勿重复提交, "again": later`, Wait: 2 * time.Second, SharedKeys: true, SkipRouteCheck: true},
		{Method: "GET", Path: "/search", Keys: []string{"ip", "query:q", "form:page", "body"}, Mode: "limit", Permits: 3},
		{Method: "POST", Path: "/rebuild/:id", Keys: []string{"path:id"}, Mode: "window", DisableRenew: true},
		{Method: "POST", Path: "/login", Keys: []string{"ip", "json:userId"}, Mode: "rate", Quota: 5, Period: 90 * time.Second,
			RateLimitHeaders: true, Message: "登录太频繁"},
	}
	if !reflect.DeepEqual(c.Lock.Rules, want) {
		t.Fatalf("loaded rules:\n%+v\nwant\n%+v\nfrom\n%s", c.Lock.Rules, want, yaml)
	}
	store := redis.MustNewRedis(redis.RedisConf{Host: miniredis.RunT(t).Addr(), Type: redis.NodeType, DisableIdentity: true})
	if _, err := middleware.NewLockMiddleware(c.Lock, store); err != nil {
		t.Fatalf("the middleware refuses the rendered rules: %v", err)
	}
}
