package interceptor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/prometheus"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/faultproxy"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// rateConf limits Pay to quota calls per period per x-user-id.
func rateConf(quota int, period time.Duration) interceptor.LockConf {
	return interceptor.LockConf{Rules: []interceptor.LockRule{{
		Method: payMethod, Mode: interceptor.ModeRate, Quota: quota, Period: period, Keys: []string{"metadata:x-user-id"},
	}}}
}

// wantRateLimited checks the refusal of a call over the rate: code, a
// RetryInfo of (0, maxDelay], and a QuotaFailure naming the method, the
// rate and the key spec. It returns the RetryInfo's delay.
func wantRateLimited(t *testing.T, err error, code codes.Code, rate string, quota int64, maxDelay time.Duration) time.Duration {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code {
		t.Fatalf("over the rate: %v, want %v", err, code)
	}
	var (
		retry        *errdetails.RetryInfo
		quotaFailure *errdetails.QuotaFailure
	)
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			retry = d
		case *errdetails.QuotaFailure:
			quotaFailure = d
		}
	}
	if retry == nil || retry.RetryDelay.AsDuration() <= 0 || retry.RetryDelay.AsDuration() > maxDelay {
		t.Fatalf("%v without a RetryInfo of (0, %v]: %v", code, maxDelay, st.Details())
	}
	if quotaFailure == nil || len(quotaFailure.Violations) != 1 {
		t.Fatalf("%v without one QuotaFailure violation: %v", code, st.Details())
	}
	v := quotaFailure.Violations[0]
	if v.Subject != payMethod || v.QuotaValue != quota || v.QuotaMetric != interceptor.RateQuotaMetric ||
		!strings.Contains(v.Description, rate) || !strings.Contains(v.Description, "metadata:x-user-id") {
		t.Fatalf("QuotaFailure %v: want subject %s, value %d, the rate metric, %q and the key spec", v, payMethod, quota, rate)
	}
	return retry.RetryDelay.AsDuration()
}

// TestRateLimitsCallsPerCaller: with 3 calls a second per caller, a new
// caller gets 3 at once and the fourth is Aborted with a RetryInfo and a
// QuotaFailure naming the rate; another caller is unaffected, and after
// the RetryInfo's delay the first is admitted again. Counted as admitted
// and rate_refused. Through a real gRPC server on 127.0.0.1, on go-zero's
// store and a go-redis client, and on go-zero's cluster store.
func TestRateLimitsCallsPerCaller(t *testing.T) {
	prometheus.Enable()
	srv := redistest.Start(t)
	cluster := redistest.SharedCluster(t)
	for _, tc := range []struct {
		name string
		user string
		new  func(interceptor.LockConf) (grpc.UnaryServerInterceptor, error)
	}{
		{"go-zero store", "alice", func(c interceptor.LockConf) (grpc.UnaryServerInterceptor, error) {
			return interceptor.UnaryServerInterceptor(c, newStore(srv))
		}},
		{"go-redis client", "bob", func(c interceptor.LockConf) (grpc.UnaryServerInterceptor, error) {
			return interceptor.UnaryServerInterceptorWithBackend(c, redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups()))
		}},
		{"go-zero cluster store", "carol", func(c interceptor.LockConf) (grpc.UnaryServerInterceptor, error) {
			return interceptor.UnaryServerInterceptor(c, zredis.MustNewRedis(zredis.RedisConf{
				Host: strings.Join(cluster.Addrs(), ","), Type: zredis.ClusterType, NonBlock: true, DisableIdentity: true,
			}))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lock, err := tc.new(rateConf(3, time.Second))
			if err != nil {
				t.Fatal(err)
			}
			client := serveWith(t, lock, newPayments())
			admitted, refused := requests(t, payMethod, "admitted"), requests(t, payMethod, "rate_refused")
			for i := range 3 {
				if _, err := client.Pay(withUser(tc.user), order("O-1")); err != nil {
					t.Fatalf("call %d of a new caller: %v", i+1, err)
				}
			}
			_, err = client.Pay(withUser(tc.user), order("O-1"))
			delay := wantRateLimited(t, err, codes.Aborted, "at most 3 calls per 1s", 3, time.Second)
			if _, err := client.Pay(withUser(tc.user+"-2"), order("O-1")); err != nil {
				t.Fatalf("another caller while the first is over its rate: %v", err)
			}
			time.Sleep(delay)
			if _, err := client.Pay(withUser(tc.user), order("O-1")); err != nil {
				t.Fatalf("after the RetryInfo's delay: %v, want admitted", err)
			}
			if got := requests(t, payMethod, "admitted") - admitted; got != 5 {
				t.Errorf("admitted counted %v times, want 5", got)
			}
			if got := requests(t, payMethod, "rate_refused") - refused; got != 1 {
				t.Errorf("rate_refused counted %v times, want 1", got)
			}
		})
	}
}

// TestRateRejectCode: a rate rule's own RejectCode is the code of its
// refusal; the configuration's RejectCode, a duplicate's, is not.
func TestRateRejectCode(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		name   string
		change func(*interceptor.LockConf)
		want   codes.Code
	}{
		{"the rule's", func(c *interceptor.LockConf) { c.Rules[0].RejectCode = "FailedPrecondition" }, codes.FailedPrecondition},
		{"the configuration's", func(c *interceptor.LockConf) { c.RejectCode = "FAILED_PRECONDITION" }, codes.Aborted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rateConf(1, time.Minute)
			c.Rules[0].Message = "请稍后再试"
			tc.change(&c)
			client := serve(t, c, newStore(srv), newPayments())
			user := "u-" + tc.name
			if _, err := client.Pay(withUser(user), order("O-1")); err != nil {
				t.Fatal(err)
			}
			_, err := client.Pay(withUser(user), order("O-1"))
			wantRateLimited(t, err, tc.want, "at most 1 call per 1m", 1, time.Minute)
			if status.Convert(err).Message() != "请稍后再试" {
				t.Fatalf("message %q, want the rule's Message", status.Convert(err).Message())
			}
		})
	}
}

// TestRateRefusalsKeepZrpcBreakerClosed: through a zrpc server and a zrpc
// client, whose breakers count go-zero's unacceptable codes as failures,
// 50 calls over the rate are all refused by the interceptor (Aborted),
// none by a breaker, and another caller's call is then served.
func TestRateRefusalsKeepZrpcBreakerClosed(t *testing.T) {
	srv := redistest.Start(t)
	lock := interceptor.MustUnaryServerInterceptor(rateConf(1, time.Hour), newStore(srv))
	client := serveZrpc(t, newPayments(), lock)
	if _, err := client.Pay(withUser("alice"), order("O-1")); err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		_, err := client.Pay(withUser("alice"), order("O-1"))
		if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "too many calls") {
			t.Fatalf("refusal %d over the rate: %v, want the interceptor's Aborted (not a breaker's)", i+1, err)
		}
	}
	if _, err := client.Pay(withUser("bob"), order("O-1")); err != nil {
		t.Fatalf("another caller after 50 refusals: %v, want it served (breaker closed)", err)
	}
}

// TestRateRedisDown: a rate rule whose store cannot be reached fails the
// call with Unavailable, saying it cannot count the call, or with FailOpen
// serves it uncounted. The store is behind a proxy that cuts every
// connection, which keeps its port: a killed server's port may be taken
// by another package's server while the tests run.
func TestRateRedisDown(t *testing.T) {
	p := faultproxy.Start(t, redistest.Start(t).Addr())
	p.Cut()
	store := zredis.MustNewRedis(zredis.RedisConf{Host: p.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
	for _, tc := range []struct {
		failOpen bool
		want     codes.Code
	}{{false, codes.Unavailable}, {true, codes.OK}} {
		c := rateConf(3, time.Minute)
		c.FailOpen = tc.failOpen
		client := serve(t, c, store, newPayments())
		ctx, cancel := context.WithTimeout(withUser("alice"), 5*time.Second)
		_, err := client.Pay(ctx, order("O-1"))
		cancel()
		if status.Code(err) != tc.want {
			t.Fatalf("FailOpen=%v with Redis down: %v, want %v", tc.failOpen, err, tc.want)
		}
		if tc.want == codes.Unavailable && !strings.Contains(err.Error(), "rate limit") {
			t.Fatalf("Unavailable %v does not say the rate cannot be counted", err)
		}
	}
}

// Rate mode loads from YAML, the rate on the rule or as the
// configuration's default.
func TestRateConfFromYAML(t *testing.T) {
	var c interceptor.LockConf
	err := conf.LoadFromYamlBytes([]byte(`
Mode: rate
Quota: 10
Period: 1s
Rules:
  - Method: /zerolock.test.Payments/Pay
    Keys: [metadata:x-user-id]
  - Method: /zerolock.test.Payments/Refund
    Keys: [metadata:x-user-id]
    Quota: 2
    Period: 1m
    RejectCode: FailedPrecondition
`), &c)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != interceptor.ModeRate || c.Quota != 10 || c.Period != time.Second || c.Rules[1].Quota != 2 || c.Rules[1].Period != time.Minute {
		t.Fatalf("loaded %+v", c)
	}
	if _, err := interceptor.UnaryServerInterceptorWithBackend(c, redislock.NewBackend(redistest.Start(t).Client(t), redislock.WithoutWakeups())); err != nil {
		t.Fatal(err)
	}
}

// What rate mode cannot do is refused at start-up with an error that
// names the fix.
func TestRateConfigRefused(t *testing.T) {
	rate := func(r interceptor.LockRule, change ...func(*interceptor.LockConf)) interceptor.LockConf {
		r.Method, r.Keys = payMethod, []string{"metadata:x-user-id"}
		return oneRule(r, change...)
	}
	rateMode := interceptor.LockRule{Mode: interceptor.ModeRate, Quota: 5, Period: time.Minute}
	withRate := func(change func(*interceptor.LockRule)) interceptor.LockRule {
		r := rateMode
		change(&r)
		return r
	}
	checkConfigCases(t, []configCase{
		{"rate", rate(rateMode), false, ""},
		{"default rate", rate(interceptor.LockRule{Mode: interceptor.ModeRate}, func(c *interceptor.LockConf) {
			c.Quota, c.Period = 5, time.Minute
		}), false, ""},
		{"reject code", rate(withRate(func(r *interceptor.LockRule) { r.RejectCode = "FailedPrecondition" })), false, ""},
		{"breaker reject code", rate(withRate(func(r *interceptor.LockRule) { r.RejectCode = "ResourceExhausted" })), false,
			"count as a failure of the server"},
		{"no quota", rate(interceptor.LockRule{Mode: interceptor.ModeRate, Period: time.Minute}), false, "rate mode needs a Quota of at least 1"},
		{"no period", rate(interceptor.LockRule{Mode: interceptor.ModeRate, Quota: 5}), false, "rate mode needs a Period"},
		{"period under 1ms", rate(withRate(func(r *interceptor.LockRule) { r.Period = time.Microsecond })), false, "at least 1ms"},
		{"period in limit mode", rate(interceptor.LockRule{Mode: interceptor.ModeLimit, Permits: 2, Period: time.Second}), false,
			"Period is for rate mode only"},
		{"expire", rate(withRate(func(r *interceptor.LockRule) { r.Expire = time.Second })), false, "remove Expire"},
		{"disable renew", rate(withRate(func(r *interceptor.LockRule) { r.DisableRenew = true })), false, "a rate rule holds none"},
		{"replay settings", rate(withRate(func(r *interceptor.LockRule) { r.Retain = time.Hour })), false, "replay mode only"},
		{"fence", rate(rateMode, func(c *interceptor.LockConf) { c.Fence = true }), false, "Fence cannot be used in rate mode"},
		{"redlock", rate(rateMode), true, "rate mode needs a lock backend that counts requests against a rate"},
	})
}
