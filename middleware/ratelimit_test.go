package middleware_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"github.com/zeromicro/go-zero/rest"

	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/resttest"
	"github.com/zerolock/zerolock/middleware"
	"github.com/zerolock/zerolock/redislock"
)

const loginRoute = "POST /login"

// loginConf limits POST /login to quota attempts per period per client
// address.
func loginConf(quota int, period time.Duration) middleware.LockConf {
	return middleware.LockConf{Rules: []middleware.LockRule{{
		Method: http.MethodPost, Path: "/login", Keys: []string{"ip"},
		Mode: middleware.ModeRate, Quota: quota, Period: period,
	}}}
}

// serveLogin serves POST /login through m; the returned function sends an
// attempt from the client address ip (X-Forwarded-For, which the ip key
// reads when no proxy hop is trusted).
func serveLogin(t *testing.T, m *middleware.LockMiddleware) func(ip string) resttest.Result {
	t.Helper()
	base := resttest.Serve(t, func(s *rest.Server) { s.Use(m.Handle) }, []rest.Route{{
		Method: http.MethodPost, Path: "/login", Handler: func(w http.ResponseWriter, r *http.Request) {},
	}})
	return func(ip string) resttest.Result {
		return resttest.Do(t, http.MethodPost, base+"/login", "", "X-Forwarded-For", ip)
	}
}

// wantRateLimited checks the answer to an attempt over the rate: 429 with
// Retry-After in whole seconds (1 to maxSecs), the JSON refusal, and the
// rate headers naming the rule's policy with nothing left.
func wantRateLimited(t *testing.T, r resttest.Result, policy string, maxSecs int) {
	t.Helper()
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("over the rate: %d %s, want 429", r.Status, r.Body)
	}
	if secs, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || secs < 1 || secs > maxSecs {
		t.Fatalf("Retry-After = %q, want 1..%d whole seconds", r.Header.Get("Retry-After"), maxSecs)
	}
	var body struct{ Code, Message string }
	if err := json.Unmarshal([]byte(r.Body), &body); err != nil || body.Code != "rate_limited" || body.Message == "" {
		t.Fatalf("429 body %q is not the JSON refusal rate_limited", r.Body)
	}
	if got := r.Header.Get("RateLimit-Policy"); got != policy {
		t.Fatalf("RateLimit-Policy = %q, want %q", got, policy)
	}
	name, _, _ := strings.Cut(policy, ";")
	if got := r.Header.Get("RateLimit"); !strings.HasPrefix(got, name+";r=0;t=") {
		t.Fatalf("RateLimit = %q, want %s;r=0;t=<seconds>", got, name)
	}
}

// TestRateLimitsLoginPerAddress: with 3 attempts a second per address, a
// new address gets 3 at once, without rate headers (RateLimitHeaders is
// off), and the fourth is refused with 429, Retry-After, the JSON refusal
// naming the rate and the RateLimit-Policy and RateLimit headers; another
// address is unaffected, and after Retry-After the first is admitted
// again. Counted as admitted and rate_refused. On go-zero's store, a
// go-redis client, and go-zero's cluster store.
func TestRateLimitsLoginPerAddress(t *testing.T) {
	srv := redistest.Start(t)
	cluster := redistest.SharedCluster(t)
	for _, tc := range []struct {
		name string
		new  func(middleware.LockConf) (*middleware.LockMiddleware, error)
	}{
		{"go-zero store", func(c middleware.LockConf) (*middleware.LockMiddleware, error) {
			return middleware.NewLockMiddleware(c, newStore(srv))
		}},
		{"go-redis client", func(c middleware.LockConf) (*middleware.LockMiddleware, error) {
			return middleware.NewLockMiddlewareWithBackend(c, redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups()))
		}},
		{"go-zero cluster store", func(c middleware.LockConf) (*middleware.LockMiddleware, error) {
			return middleware.NewLockMiddleware(c, zredis.MustNewRedis(zredis.RedisConf{
				Host: strings.Join(cluster.Addrs(), ","), Type: zredis.ClusterType, NonBlock: true, DisableIdentity: true,
			}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := tc.new(loginConf(3, time.Second))
			if err != nil {
				t.Fatal(err)
			}
			login := serveLogin(t, m)
			admitted, refused := counter(t, loginRoute, "admitted"), counter(t, loginRoute, "rate_refused")
			// Each subtest's server keeps its own keys apart by address.
			ip := map[string]string{"go-zero store": "10.0.0.1", "go-redis client": "10.0.0.2", "go-zero cluster store": "10.0.0.3"}[tc.name]

			for i := range 3 {
				r := login(ip)
				if r.Status != http.StatusOK {
					t.Fatalf("attempt %d of a new address: %d %s", i+1, r.Status, r.Body)
				}
				if h := r.Header.Get("RateLimit"); h != "" {
					t.Fatalf("attempt %d: RateLimit %q on an admitted request without RateLimitHeaders", i+1, h)
				}
			}
			over := login(ip)
			wantRateLimited(t, over, `"POST /login";q=3;w=1`, 1)
			if !strings.Contains(over.Body, "at most 3 per 1s") {
				t.Fatalf("429 body %q does not name the rate", over.Body)
			}
			if r := login(ip + "0"); r.Status != http.StatusOK {
				t.Fatalf("another address while the first is over its rate: %d %s", r.Status, r.Body)
			}
			time.Sleep(time.Second) // Retry-After: 1
			if r := login(ip); r.Status != http.StatusOK {
				t.Fatalf("after Retry-After: %d %s, want admitted", r.Status, r.Body)
			}
			if got := counter(t, loginRoute, "admitted") - admitted; got != 5 {
				t.Errorf("admitted counted %v times, want 5", got)
			}
			if got := counter(t, loginRoute, "rate_refused") - refused; got != 1 {
				t.Errorf("rate_refused counted %v times, want 1", got)
			}
		})
	}
}

// TestRateLimitHeadersOnAdmitted: with RateLimitHeaders, on the rule or
// the configuration, every admitted request carries the policy and the
// quota left (r counting down) with t the whole period; the refusal's t is
// the time until the first admission leaves the window, in whole seconds.
func TestRateLimitHeadersOnAdmitted(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name   string
		change func(*middleware.LockConf)
	}{
		{"on the rule", func(c *middleware.LockConf) { c.Rules[0].RateLimitHeaders = true }},
		{"on the configuration", func(c *middleware.LockConf) { c.RateLimitHeaders = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := loginConf(3, time.Minute)
			tc.change(&c)
			login := serveLogin(t, mustMiddleware(t, c, newStore(srv)))
			ip := "10.1.0." + strconv.Itoa(len(tc.name))
			for i := range 3 {
				r := login(ip)
				if r.Status != http.StatusOK {
					t.Fatalf("attempt %d: %d %s", i+1, r.Status, r.Body)
				}
				if got, want := r.Header.Get("RateLimit-Policy"), `"POST /login";q=3;w=60`; got != want {
					t.Fatalf("attempt %d: RateLimit-Policy %q, want %q", i+1, got, want)
				}
				if got, want := r.Header.Get("RateLimit"), `"POST /login";r=`+strconv.Itoa(2-i)+`;t=60`; got != want {
					t.Fatalf("attempt %d: RateLimit %q, want %q", i+1, got, want)
				}
			}
			over := login(ip)
			wantRateLimited(t, over, `"POST /login";q=3;w=60`, 60)
			if got := over.Header.Get("RateLimit"); got != `"POST /login";r=0;t=60` {
				t.Fatalf("RateLimit of the refusal %q, want t=60 (the last admission's period, rounded up)", got)
			}
		})
	}
}

// TestRateMessageAndRefusalHandler: a rule's Message is the 429's message,
// and a refusal handler receives the *Error of ErrRateLimited, with
// RetryAfter, the rate headers already set.
func TestRateMessageAndRefusalHandler(t *testing.T) {
	srv := redistest.Start(t)
	c := loginConf(1, time.Minute)
	c.Rules[0].Message = "登录太频繁，请稍后再试"
	m := mustMiddleware(t, c, newStore(srv))
	login := serveLogin(t, m)
	login("10.2.0.1")
	if r := login("10.2.0.1"); !strings.Contains(r.Body, c.Rules[0].Message) {
		t.Fatalf("429 body %q, want the rule's Message", r.Body)
	}

	var seen *middleware.Error
	m.SetRefusalHandler(func(ctx context.Context, e *middleware.Error) (int, any) {
		seen = e
		return http.StatusOK, map[string]any{"code": 42, "msg": e.Message}
	})
	r := login("10.2.0.1")
	if seen == nil || !errors.Is(seen, middleware.ErrRateLimited) || seen.Status != http.StatusTooManyRequests ||
		seen.Code != "rate_limited" || seen.RetryAfter <= 0 || seen.RetryAfter > time.Minute {
		t.Fatalf("the refusal handler saw %+v, want the 429 of ErrRateLimited with a RetryAfter", seen)
	}
	if r.Status != http.StatusOK || r.Header.Get("Retry-After") == "" || r.Header.Get("RateLimit") == "" {
		t.Fatalf("through the refusal handler: %d, Retry-After %q, RateLimit %q; want the handler's 200 with both headers",
			r.Status, r.Header.Get("Retry-After"), r.Header.Get("RateLimit"))
	}
}

// TestRateRedisDown: a rate rule whose store cannot be reached answers 503
// lock_unavailable, saying it cannot count the request, or with FailOpen
// serves it uncounted; counted as store_error or fail_open. The store is
// behind a proxy that cuts every connection, which keeps its port: a
// killed server's port may be taken by another package's server while the
// tests run.
func TestRateRedisDown(t *testing.T) {
	p := faultproxy.Start(t, redistest.Start(t).Addr())
	p.Cut()
	store := zredis.MustNewRedis(zredis.RedisConf{Host: p.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
	for _, tc := range []struct {
		name     string
		failOpen bool
		want     int
		outcome  string
	}{{"fail closed", false, http.StatusServiceUnavailable, "store_error"}, {"fail open", true, http.StatusOK, "fail_open"}} {
		t.Run(tc.name, func(t *testing.T) {
			c := loginConf(3, time.Minute)
			c.FailOpen = tc.failOpen
			login := serveLogin(t, mustMiddleware(t, c, store))
			before := counter(t, loginRoute, tc.outcome)
			r := login("10.3.0.1")
			if r.Status != tc.want {
				t.Fatalf("with Redis down: %d %s, want %d", r.Status, r.Body, tc.want)
			}
			if tc.want == http.StatusServiceUnavailable &&
				(!strings.Contains(r.Body, `"code":"lock_unavailable"`) || !strings.Contains(r.Body, "rate limit")) {
				t.Fatalf("503 body %q is not the JSON refusal saying the rate cannot be counted", r.Body)
			}
			if got := counter(t, loginRoute, tc.outcome) - before; got != 1 {
				t.Errorf("outcome %s counted %v times, want 1", tc.outcome, got)
			}
		})
	}
}

// Rate mode loads from YAML, the rate on the rule or as the
// configuration's default.
func TestRateConfLoads(t *testing.T) {
	var c middleware.LockConf
	err := conf.LoadFromYamlBytes([]byte(`
Quota: 100
Period: 1h
RateLimitHeaders: true
Rules:
  - Method: POST
    Path: /login
    Keys: [ip]
    Mode: rate
    Quota: 5
    Period: 1m
  - Method: GET
    Path: /search
    Keys: [claim:userId]
    Mode: rate
`), &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Quota != 100 || c.Period != time.Hour || !c.RateLimitHeaders || c.Rules[0].Mode != middleware.ModeRate ||
		c.Rules[0].Quota != 5 || c.Rules[0].Period != time.Minute || c.Rules[1].Quota != 0 {
		t.Fatalf("loaded %+v", c)
	}
	if _, err := middleware.NewLockMiddlewareWithBackend(c, redislock.NewBackend(redistest.Start(t).Client(t), redislock.WithoutWakeups())); err != nil {
		t.Fatal(err)
	}
}

// What rate mode cannot do is refused at start-up, by the constructor and
// by ForRule, with an error that names the fix.
func TestRateConfigRefused(t *testing.T) {
	rate := func(r middleware.LockRule, change ...func(*middleware.LockConf)) middleware.LockConf {
		r.Method, r.Path, r.Keys = http.MethodPost, "/login", []string{"ip"}
		return oneRule(r, change...)
	}
	rateMode := middleware.LockRule{Mode: middleware.ModeRate, Quota: 5, Period: time.Minute}
	withRate := func(change func(*middleware.LockRule)) middleware.LockRule {
		r := rateMode
		change(&r)
		return r
	}
	redlock := checkConfigCases(t, []configCase{
		{"rate", rate(rateMode), false, ""},
		{"default rate", rate(middleware.LockRule{Mode: middleware.ModeRate}, func(c *middleware.LockConf) {
			c.Quota, c.Period = 5, time.Minute
		}), false, ""},
		{"rate mode by default", rate(middleware.LockRule{Quota: 5, Period: time.Minute}, func(c *middleware.LockConf) { c.Mode = middleware.ModeRate }), false, ""},
		{"headers", rate(withRate(func(r *middleware.LockRule) { r.RateLimitHeaders = true })), false, ""},
		{"no quota", rate(middleware.LockRule{Mode: middleware.ModeRate, Period: time.Minute}), false, "rate mode needs a Quota of at least 1"},
		{"no period", rate(middleware.LockRule{Mode: middleware.ModeRate, Quota: 5}), false, "rate mode needs a Period"},
		{"period under 1ms", rate(withRate(func(r *middleware.LockRule) { r.Period = time.Microsecond })), false, "at least 1ms"},
		{"quota in inflight mode", rate(middleware.LockRule{Quota: 5}), false, "Quota is for rate mode only"},
		{"headers in inflight mode", rate(middleware.LockRule{RateLimitHeaders: true}), false, "RateLimitHeaders is for rate mode only"},
		{"reject code", rate(withRate(func(r *middleware.LockRule) { r.RejectCode = 409 })), false,
			"a rate rule's refusal is always 429 Too Many Requests"},
		{"expire", rate(withRate(func(r *middleware.LockRule) { r.Expire = time.Second })), false, "remove Expire"},
		{"max hold", rate(withRate(func(r *middleware.LockRule) { r.MaxHold = time.Minute })), false, "a rate rule holds none"},
		{"replay settings", rate(withRate(func(r *middleware.LockRule) { r.Fingerprint = []string{"ip"} })), false, "replay mode only"},
		{"fence", rate(rateMode, func(c *middleware.LockConf) { c.Fence = true }), false, "Fence cannot be used in rate mode"},
		{"redlock", rate(rateMode), true, "rate mode needs a lock backend that counts requests against a rate"},
	})

	m, err := middleware.NewLockMiddlewareWithBackend(middleware.LockConf{}, redlock)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.ForRule(middleware.LockRule{Method: http.MethodPost, Path: "/login", Keys: []string{"ip"},
		Mode: middleware.ModeRate, Quota: 5, Period: time.Minute})
	if !errors.Is(err, middleware.ErrBadConfig) || !strings.Contains(err.Error(), "use a Redis store backend") {
		t.Fatalf("ForRule in rate mode on Redlock: %v, want ErrBadConfig naming the fix", err)
	}
}
