package main

import (
	"reflect"
	"strings"
	"testing"
)

// TestParseProperties: every property sets its field from a valid value;
// a bad value, an unknown lock* property (a misspelling named with its
// fix), a rule without lock, and settings that contradict each other are
// each a problem naming the property.
func TestParseProperties(t *testing.T) {
	r, problems := parseProperties(map[string]string{
		"summary":              "not ours",
		"lock":                 " claim:userId , json:orderId ",
		"lockMode":             "replay",
		"lockExpire":           "10s",
		"lockRetain":           "24h",
		"lockDisableRenew":     "false",
		"lockMaxHold":          "1m",
		"lockMaxResponseBytes": "4096",
		"lockFingerprint":      "json:orderId",
		"lockRejectCode":       "425",
		"lockMessage":          "请勿重复提交",
		"lockWait":             "2s",
		"lockSharedKeys":       "true",
		"lockSkipRouteCheck":   "true",
	})
	if len(problems) > 0 {
		t.Fatalf("problems with valid properties: %v", problems)
	}
	want := rule{Keys: []string{"claim:userId", "json:orderId"}, Mode: "replay", Expire: "10s", Retain: "24h",
		MaxHold: "1m", MaxResponseBytes: 4096, Fingerprint: []string{"json:orderId"}, RejectCode: 425,
		Message: "请勿重复提交", Wait: "2s", SharedKeys: true, SkipRouteCheck: true}
	want.expire, want.maxHold = r.expire, r.maxHold
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("rule = %+v\nwant   %+v", r, want)
	}
	if r.expire.String() != "10s" || r.maxHold.String() != "1m0s" {
		t.Fatalf("parsed durations %v, %v", r.expire, r.maxHold)
	}
	r, problems = parseProperties(map[string]string{
		"lock":                 "ip,json:userId",
		"lockMode":             "rate",
		"lockQuota":            "5",
		"lockPeriod":           "1m",
		"lockRateLimitHeaders": "true",
		"lockMessage":          "登录太频繁",
	})
	if want := (rule{Keys: []string{"ip", "json:userId"}, Mode: "rate", Quota: 5, Period: "1m", RateLimitHeaders: true,
		Message: "登录太频繁"}); len(problems) > 0 || !reflect.DeepEqual(r, want) {
		t.Fatalf("rate rule = %+v, problems %v\nwant %+v", r, problems, want)
	}

	for _, tc := range []struct {
		name  string
		props map[string]string
		prop  string // the problem's property
		want  string // in its message
	}{
		{"unknown", map[string]string{"lock": "ip", "lockTimeout": "1s"}, "lockTimeout", "unknown property lockTimeout (known: lock, lockMode"},
		{"case typo", map[string]string{"lock": "ip", "lockmode": "window"}, "lockmode", "did you mean lockMode?"},
		{"capitalised", map[string]string{"lock": "ip", "LockExpire": "1s"}, "LockExpire", "did you mean lockExpire?"},
		{"no lock", map[string]string{"lockMode": "window"}, "", "a rule needs lock"},
		{"empty key", map[string]string{"lock": "ip,,claim:userId"}, "lock", "an empty item"},
		{"mode", map[string]string{"lock": "ip", "lockMode": "once"}, "lockMode", "want inflight, window, replay, limit or rate"},
		{"duration", map[string]string{"lock": "ip", "lockExpire": "10"}, "lockExpire", "not a duration"},
		{"short expire", map[string]string{"lock": "ip", "lockExpire": "10us"}, "lockExpire", "at least 1ms"},
		{"negative wait", map[string]string{"lock": "ip", "lockWait": "-1s"}, "lockWait", "must not be negative"},
		{"zero wait", map[string]string{"lock": "ip", "lockMode": "replay", "lockSharedKeys": "true", "lockWait": "0s"}, "lockWait", "0 is the Lock section's value"},
		{"zero max hold", map[string]string{"lock": "ip", "lockMaxHold": "0"}, "lockMaxHold", "0 is the Lock section's value"},
		{"permits", map[string]string{"lock": "ip", "lockPermits": "two"}, "lockPermits", "whole number"},
		{"zero permits", map[string]string{"lock": "ip", "lockPermits": "0"}, "lockPermits", "at least 1"},
		{"quota", map[string]string{"lock": "ip", "lockQuota": "5/m"}, "lockQuota", "whole number"},
		{"zero quota", map[string]string{"lock": "ip", "lockQuota": "0"}, "lockQuota", "at least 1"},
		{"quota over MaxQuota", map[string]string{"lock": "ip", "lockMode": "rate", "lockQuota": "100001"}, "lockQuota", "at most 100000"},
		{"period", map[string]string{"lock": "ip", "lockPeriod": "60"}, "lockPeriod", "not a duration"},
		{"short period", map[string]string{"lock": "ip", "lockPeriod": "500us"}, "lockPeriod", "at least 1ms"},
		{"headers", map[string]string{"lock": "ip", "lockRateLimitHeaders": "1"}, "lockRateLimitHeaders", "want true or false"},
		{"bytes", map[string]string{"lock": "ip", "lockMaxResponseBytes": "1MiB"}, "lockMaxResponseBytes", "whole number"},
		{"reject code", map[string]string{"lock": "ip", "lockRejectCode": "503"}, "lockRejectCode", "must be a 4xx"},
		{"bool", map[string]string{"lock": "ip", "lockSharedKeys": "yes"}, "lockSharedKeys", "want true or false"},
		{"permits outside limit", map[string]string{"lock": "ip", "lockMode": "window", "lockPermits": "2"}, "lockPermits", "limit mode only (this rule is in window mode)"},
		{"replay only", map[string]string{"lock": "ip", "lockMode": "inflight", "lockRetain": "1h", "lockWait": "1s"}, "lockRetain", "lockRetain and lockWait are for replay mode only"},
		{"reject in limit", map[string]string{"lock": "ip", "lockMode": "limit", "lockPermits": "2", "lockRejectCode": "429"}, "lockRejectCode", "limit mode refuses none"},
		{"quota outside rate", map[string]string{"lock": "ip", "lockMode": "limit", "lockPermits": "2", "lockQuota": "5"}, "lockQuota", "lockQuota is for rate mode only (this rule is in limit mode): set lockMode: rate, or remove it"},
		{"rate only", map[string]string{"lock": "ip", "lockMode": "window", "lockQuota": "5", "lockPeriod": "1m", "lockRateLimitHeaders": "false"}, "lockQuota", "lockQuota and lockPeriod and lockRateLimitHeaders are for rate mode only (this rule is in window mode): set lockMode: rate, or remove them"},
		{"permits in rate", map[string]string{"lock": "ip", "lockMode": "rate", "lockQuota": "5", "lockPeriod": "1m", "lockPermits": "2"}, "lockPermits", "limit mode only (this rule is in rate mode)"},
		{"replay only in rate", map[string]string{"lock": "ip", "lockMode": "rate", "lockQuota": "5", "lockPeriod": "1m", "lockRetain": "1h", "lockWait": "1s"}, "lockRetain", "lockRetain and lockWait are for replay mode only (this rule is in rate mode)"},
		{"expire in rate", map[string]string{"lock": "ip", "lockMode": "rate", "lockQuota": "5", "lockPeriod": "1m", "lockExpire": "5s"}, "lockExpire", "a rate rule takes none (its window is lockPeriod)"},
		{"max hold in rate", map[string]string{"lock": "ip", "lockMode": "rate", "lockQuota": "5", "lockPeriod": "1m", "lockMaxHold": "1m"}, "lockMaxHold", "a rate rule holds none"},
		{"no renewal in rate", map[string]string{"lock": "ip", "lockMode": "rate", "lockQuota": "5", "lockPeriod": "1m", "lockDisableRenew": "true"}, "lockDisableRenew", "a rate rule holds none"},
		{"reject in rate", map[string]string{"lock": "ip", "lockMode": "rate", "lockQuota": "5", "lockPeriod": "1m", "lockRejectCode": "409"}, "lockRejectCode", "always 429"},
		{"max hold without renewal", map[string]string{"lock": "ip", "lockMaxHold": "1m", "lockDisableRenew": "true"}, "lockMaxHold", "remove one of them"},
		{"max hold under expire", map[string]string{"lock": "ip", "lockMaxHold": "1s", "lockExpire": "2s"}, "lockMaxHold", "shorter than lockExpire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := parseProperties(tc.props)
			if len(problems) != 1 || problems[0].property != tc.prop || !strings.Contains(problems[0].msg, tc.want) {
				t.Fatalf("problems = %+v, want one on %q containing %q", problems, tc.prop, tc.want)
			}
		})
	}
}

// TestEmptyLockLocksTheRoute: lock: "" is a rule without keys, which the
// middleware accepts (one key for the whole route).
func TestEmptyLockLocksTheRoute(t *testing.T) {
	r, problems := parseProperties(map[string]string{"lock": ""})
	if len(problems) > 0 || r.Keys != nil {
		t.Fatalf("rule %+v, problems %v", r, problems)
	}
}

// TestFullPath applies a group's prefix as goctl's generated routes do.
func TestFullPath(t *testing.T) {
	for _, tc := range []struct{ prefix, path, want string }{
		{"", "/orders", "/orders"},
		{"/v1", "/orders/:id", "/v1/orders/:id"},
		{"v1", "/orders", "/v1/orders"},
		{"/v1/", "/orders", "/v1/orders"},
		{"/v1", "/", "/v1"},
	} {
		if got := fullPath(tc.prefix, tc.path); got != tc.want {
			t.Errorf("fullPath(%q, %q) = %q, want %q", tc.prefix, tc.path, got, tc.want)
		}
	}
}

// TestRateRuleMayInheritTheRate: a rule in rate mode without lockQuota or
// lockPeriod is accepted, since the Lock section's Quota and Period, which
// the plugin does not read, may set them; the middleware checks at
// start-up that one of the two does.
func TestRateRuleMayInheritTheRate(t *testing.T) {
	for _, props := range []map[string]string{
		{"lock": "ip", "lockMode": "rate"},
		{"lock": "ip", "lockMode": "rate", "lockQuota": "5"},
		{"lock": "ip", "lockMode": "rate", "lockPeriod": "1m"},
	} {
		if _, problems := parseProperties(props); len(problems) > 0 {
			t.Errorf("%v: %v", props, problems)
		}
	}
}
