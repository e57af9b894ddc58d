package middleware_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/zeromicro/go-zero/core/logx"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/middleware"
)

// TestSharedRuleWarning: a rule with no per-user or per-client key (claim,
// header, ip) would make one user's request block everybody's; it is
// flagged at start-up with a warning logged at error level (go-zero has no
// warn level, and operators often log errors only), and a scoped rule is not.
// (That two users with one order id do not block each other is shown by
// TestConcurrentDuplicatesOneReachesHandler.)
func TestSharedRuleWarning(t *testing.T) {
	var buf bytes.Buffer
	logx.SetLevel(logx.ErrorLevel)
	logx.SetWriter(logx.NewWriter(&buf))
	t.Cleanup(logx.Disable)

	store := zredis.New(miniredis.RunT(t).Addr(), zredis.WithIdentity())
	rule := func(keys ...string) middleware.LockConf {
		return middleware.LockConf{Rules: []middleware.LockRule{{Method: http.MethodPost, Path: "/orders", Keys: keys}}}
	}
	if _, err := middleware.NewLockMiddleware(rule("claim:userId", "json:orderId"), store); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "warning") {
		t.Fatalf("a rule scoped by user was flagged: %s", buf.String())
	}
	if _, err := middleware.NewLockMiddleware(rule("json:orderId"), store); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "POST /orders has no claim:, header: or ip key") {
		t.Fatalf("a rule shared by every user was not flagged; log: %q", buf.String())
	}
}

// TestSharedKeysSilenceWarning: SharedKeys, on the rule or the
// configuration, says that a rule's keys are shared by every user on
// purpose, and the rule is not flagged, in any mode.
func TestSharedKeysSilenceWarning(t *testing.T) {
	var buf bytes.Buffer
	logx.SetLevel(logx.ErrorLevel)
	logx.SetWriter(logx.NewWriter(&buf))
	t.Cleanup(logx.Disable)

	store := zredis.New(miniredis.RunT(t).Addr(), zredis.WithIdentity())
	for _, mode := range []string{middleware.ModeInflight, middleware.ModeWindow, middleware.ModeReplay, middleware.ModeLimit} {
		byRule := middleware.LockConf{Mode: mode, Permits: 1, Rules: []middleware.LockRule{
			{Method: http.MethodPost, Path: "/orders", Keys: []string{"json:orderId"}, SharedKeys: true}}}
		byConf := middleware.LockConf{Mode: mode, Permits: 1, SharedKeys: true, Rules: []middleware.LockRule{
			{Method: http.MethodPost, Path: "/orders", Keys: []string{"json:orderId"}}}}
		for name, c := range map[string]middleware.LockConf{"rule": byRule, "conf": byConf} {
			buf.Reset()
			if _, err := middleware.NewLockMiddleware(c, store); err != nil {
				t.Fatalf("%s, shared by the %s: %v", mode, name, err)
			}
			if strings.Contains(buf.String(), "warning") {
				t.Fatalf("%s, shared by the %s: flagged: %s", mode, name, buf.String())
			}
		}
	}
	buf.Reset()
	if _, err := middleware.NewLockMiddleware(middleware.LockConf{Rules: []middleware.LockRule{
		{Method: http.MethodPost, Path: "/orders", Keys: []string{"json:orderId"}}}}, store); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "POST /orders has no claim:, header: or ip key") || !strings.Contains(buf.String(), "SharedKeys: true") {
		t.Fatalf("a rule shared by every user, without SharedKeys, was not flagged naming SharedKeys; log: %q", buf.String())
	}
}
