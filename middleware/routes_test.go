package middleware_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/internal/testing/stubbackend"
	"github.com/zerolock/zerolock/middleware"
)

func noop(http.ResponseWriter, *http.Request) {}

// A rule that matches no route of the server (a typo in Path or Method)
// locks nothing; CheckRoutes refuses it at start-up, naming the routes
// there are, unless the rule says its route comes later.
func TestCheckRoutes(t *testing.T) {
	server := rest.MustNewServer(resttest.Conf(t))
	logx.Disable()
	server.AddRoutes([]rest.Route{
		{Method: http.MethodPost, Path: "/orders", Handler: noop},
		{Method: http.MethodPost, Path: "/coupons/:code/redeem", Handler: noop},
	})
	server.AddRoutes([]rest.Route{{Method: http.MethodPut, Path: "/orders/:id", Handler: noop}}, rest.WithPrefix("/api"))
	rule := func(method, path string) middleware.LockRule {
		return middleware.LockRule{Method: method, Path: path, Keys: []string{"header:X-User"}}
	}
	for _, tc := range []struct {
		name  string
		rules []middleware.LockRule
		want  []string // in the error; none: no error
	}{
		{"all routed", []middleware.LockRule{rule("POST", "/orders"), rule("POST", "/coupons/:code/redeem"), rule("PUT", "/api/orders/:id")}, nil},
		{"typo in path", []middleware.LockRule{rule("POST", "/order")},
			[]string{"rule POST /order matches no route", "POST routes: /coupons/:code/redeem, /orders", "SkipRouteCheck"}},
		{"wrong method", []middleware.LockRule{rule("GET", "/orders")}, []string{"rule GET /orders", "no GET routes"}},
		{"prefix forgotten", []middleware.LockRule{rule("PUT", "/orders/:id")}, []string{"PUT routes: /api/orders/:id"}},
		{"two bad rules, both named", []middleware.LockRule{rule("POST", "/order"), rule("POST", "/coupon")},
			[]string{"POST /order ", "POST /coupon "}},
		{"added later", []middleware.LockRule{{Method: "POST", Path: "/later", Keys: []string{"ip"}, SkipRouteCheck: true}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := middleware.NewLockMiddlewareWithBackend(middleware.LockConf{Rules: tc.rules}, stubbackend.Recorders())
			if err != nil {
				t.Fatal(err)
			}
			err = m.CheckRoutes(server)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("CheckRoutes = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, middleware.ErrBadConfig) {
				t.Fatalf("CheckRoutes = %v, want ErrBadConfig", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("CheckRoutes error %q does not say %q", err, w)
				}
			}
		})
	}
}

// Rules served without CheckRoutes are flagged once, at error level, at the
// first request; checked rules are not.
func TestUncheckedRulesWarned(t *testing.T) {
	srv := redistest.Start(t)
	var buf bytes.Buffer
	serve := func(c middleware.LockConf, check bool) {
		m := mustMiddleware(t, c, newStore(srv))
		base := resttest.Serve(t, func(s *rest.Server) {
			s.Use(m.Handle)
			s.AddRoute(rest.Route{Method: http.MethodPost, Path: "/orders", Handler: noop})
			if check {
				m.MustCheckRoutes(s)
			}
		}, nil)
		logx.SetLevel(logx.ErrorLevel)
		logx.SetWriter(logx.NewWriter(&buf))
		t.Cleanup(logx.Disable)
		for i := 0; i < 2; i++ {
			resttest.Do(t, http.MethodPost, base+"/orders", "", "X-User", "u")
		}
	}
	conf := func() middleware.LockConf {
		return middleware.LockConf{Rules: []middleware.LockRule{{Method: "POST", Path: "/orders", Keys: []string{"header:X-User"}}}}
	}
	serve(conf(), true)
	if strings.Contains(buf.String(), "never checked") {
		t.Fatalf("checked rules were flagged: %s", buf.String())
	}
	serve(conf(), false)
	if n := strings.Count(buf.String(), "never checked against the server's routes"); n != 1 {
		t.Fatalf("unchecked rules flagged %d times, want once; log: %q", n, buf.String())
	}
}

// Behind one proxy that appends to X-Forwarded-For, the client writes the
// first address and cannot change the last: TrustedProxyHops: 1 keys on the
// last, so a forged first address does not make a new key.
func TestTrustedProxyHops(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		hops int
		want []int
	}{
		{0, []int{200, 200, 409}}, // go-zero's GetRemoteAddr: the forged header is the key
		{1, []int{200, 409, 409}},
	} {
		m := mustMiddleware(t, middleware.LockConf{Mode: middleware.ModeWindow, TrustedProxyHops: tc.hops, Prefix: fmt.Sprintf("hops%d", tc.hops),
			Rules: []middleware.LockRule{{Method: http.MethodPost, Path: "/redeem", Keys: []string{"ip"}}}}, newStore(srv))
		base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) },
			[]rest.Route{{Method: http.MethodPost, Path: "/redeem", Handler: noop}})
		url := base + "/redeem"
		var got []int
		for _, xff := range []string{"1.1.1.1, 203.0.113.7", "2.2.2.2, 203.0.113.7", "2.2.2.2, 203.0.113.7"} {
			got = append(got, resttest.Do(t, http.MethodPost, url, "", "X-Forwarded-For", xff).Status)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("TrustedProxyHops %d: statuses %v, want %v", tc.hops, got, tc.want)
			}
		}
	}
	if _, err := middleware.NewLockMiddleware(middleware.LockConf{TrustedProxyHops: -1}, newStore(srv)); !errors.Is(err, middleware.ErrBadConfig) {
		t.Fatalf("TrustedProxyHops -1: %v, want ErrBadConfig", err)
	}
}
