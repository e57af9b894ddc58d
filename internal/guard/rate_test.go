package guard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

// rates is an in-memory zerolock.RateBackend: each key admits quota
// requests and then refuses, with the retryAfter and reset it is given;
// err, when set, is every count's answer. It makes no locks.
type rates struct {
	mu         sync.Mutex
	counts     map[string]int
	retryAfter time.Duration
	err        error
}

func newRates() *rates {
	return &rates{counts: make(map[string]int), retryAfter: 2500 * time.Millisecond}
}

func (*rates) NewLocker(string, zerolock.LockerOptions) zerolock.Locker {
	panic("a rate rule asked for a lock")
}

func (r *rates) Rate(_ context.Context, key string, quota int, period time.Duration) (zerolock.RateResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return zerolock.RateResult{}, r.err
	}
	if r.counts[key] >= quota {
		return zerolock.RateResult{RetryAfter: r.retryAfter, Reset: period}, nil
	}
	r.counts[key]++
	return zerolock.RateResult{Admitted: true, Remaining: quota - r.counts[key], Reset: period}, nil
}

// admitting is an exchange that is also an Admitter.
type admitting struct {
	exchange
	admitted *zerolock.RateResult
	ranAfter bool // Run came after Admit
}

func (a *admitting) Admit(r zerolock.RateResult) { a.admitted = &r }

func (a *admitting) Run(ctx context.Context, how Run) {
	a.ranAfter = a.admitted != nil
	a.exchange.Run(ctx, how)
}

func TestResolvePolicyRate(t *testing.T) {
	defaults := Settings{Expire: time.Second, Mode: ModeInflight}
	for _, tc := range []struct {
		name          string
		defaults      Settings
		rule          Settings
		quota         int
		period        time.Duration
		errMentioning string
	}{
		{"rule's rate", defaults, Settings{Mode: ModeRate, Quota: 5, Period: time.Minute}, 5, time.Minute, ""},
		{"configuration's rate", Settings{Expire: time.Second, Mode: ModeRate, Quota: 3, Period: time.Second}, Settings{}, 3, time.Second, ""},
		{"rule overrides the configuration", Settings{Expire: time.Second, Mode: ModeRate, Quota: 3, Period: time.Second},
			Settings{Quota: 1, Period: time.Hour}, 1, time.Hour, ""},
		{"configuration's rate is the default of rate rules only", Settings{Expire: time.Second, Mode: ModeInflight, Quota: 3, Period: time.Second},
			Settings{}, 0, 0, ""},
		{"1ms is a period", defaults, Settings{Mode: ModeRate, Quota: 1, Period: time.Millisecond}, 1, time.Millisecond, ""},
		{"rate without quota", defaults, Settings{Mode: ModeRate, Period: time.Minute}, 0, 0, "Quota of at least 1"},
		{"rate over MaxQuota", defaults, Settings{Mode: ModeRate, Quota: MaxQuota + 1, Period: time.Hour}, 0, 0, "is over 100000"},
		{"rate without period", defaults, Settings{Mode: ModeRate, Quota: 5}, 0, 0, "needs a Period"},
		{"period under 1ms", defaults, Settings{Mode: ModeRate, Quota: 5, Period: 999 * time.Microsecond}, 0, 0, "at least 1ms"},
		{"negative quota", defaults, Settings{Mode: ModeRate, Quota: -1, Period: time.Second}, 0, 0, "Quota -1"},
		{"negative default period", Settings{Expire: time.Second, Mode: ModeRate, Period: -time.Second},
			Settings{Quota: 1, Period: time.Second}, 0, 0, "Period -1s"},
		{"quota in inflight mode", defaults, Settings{Quota: 2}, 0, 0, "Quota is for rate mode only (this rule is in inflight mode)"},
		{"period in limit mode", defaults, Settings{Mode: ModeLimit, Permits: 1, Period: time.Second}, 0, 0, "Period is for rate mode only"},
		{"both in window mode", defaults, Settings{Mode: ModeWindow, Quota: 1, Period: time.Second}, 0, 0,
			"Quota and Period are for rate mode only (this rule is in window mode): set Mode: rate, or remove them"},
		{"permits in rate mode", defaults, Settings{Mode: ModeRate, Quota: 1, Period: time.Second, Permits: 2}, 0, 0, "limit mode only"},
		{"expire on a rate rule", defaults, Settings{Mode: ModeRate, Quota: 1, Period: time.Second, Expire: time.Second}, 0, 0,
			"remove Expire"},
		{"disable renew on a rate rule", defaults, Settings{Mode: ModeRate, Quota: 1, Period: time.Second, DisableRenew: true}, 0, 0,
			"a rate rule holds none"},
		{"max hold on a rate rule", defaults, Settings{Mode: ModeRate, Quota: 1, Period: time.Second, MaxHold: time.Minute}, 0, 0,
			"a rate rule holds none"},
		{"the configuration's renewal is still checked", Settings{Expire: time.Second, Mode: ModeRate, MaxHold: time.Millisecond},
			Settings{Quota: 1, Period: time.Second}, 0, 0, "MaxHold 1ms is shorter than Expire"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ResolvePolicy(tc.defaults, tc.rule)
			if tc.errMentioning != "" {
				if !errors.Is(err, ErrBadPolicy) || !strings.Contains(err.Error(), tc.errMentioning) {
					t.Fatalf("err = %v, want ErrBadPolicy mentioning %q", err, tc.errMentioning)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Quota != tc.quota || p.Period != tc.period {
				t.Fatalf("policy %+v, want %d per %v", p, tc.quota, tc.period)
			}
			if tc.quota > 0 && (p.Renew || p.Window || p.Replay || p.Permits != 0 || p.Expire != tc.period || modeOf(p) != ModeRate) {
				t.Fatalf("policy %+v, want rate mode alone, no renewal, Expire = Period", p)
			}
		})
	}
}

// Compile refuses rate mode on a backend that cannot count, with Fence,
// and with replay's settings, each naming the fix; a rule's RejectCode is
// the transport's to take.
func TestCompileRate(t *testing.T) {
	rate := Settings{Mode: ModeRate, Quota: 2, Period: time.Second}
	for _, tc := range []struct {
		name    string
		g       *Guard
		rule    Settings
		mention string
	}{
		{"no rate backend", &Guard{Backend: mutexes{}}, rate, "use a Redis store backend"},
		{"semaphores are no rate backend", &Guard{Backend: newSemaphores(time.Second)}, rate, "counts requests against a rate"},
		{"fence", &Guard{Backend: newRates(), Fence: true}, rate, "Fence cannot be used in rate mode"},
		{"retain", &Guard{Backend: newRates()}, Settings{Mode: ModeRate, Quota: 2, Period: time.Second, Retain: time.Hour},
			"Retain is for replay mode only (this rule is in rate mode)"},
		{"wait", &Guard{Backend: newRates()}, Settings{Mode: ModeRate, Quota: 2, Period: time.Second, Wait: time.Second},
			"Wait is for replay mode only (this rule is in rate mode)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.g.Compile("POST /login", []string{"test"}, Settings{Expire: time.Second, Mode: ModeInflight}, tc.rule)
			if !errors.Is(err, ErrBadPolicy) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err = %v, want ErrBadPolicy mentioning %q", err, tc.mention)
			}
		})
	}
	ru, err := (&Guard{Backend: newRates()}).Compile("POST /login", []string{"test"},
		Settings{Expire: time.Second, Mode: ModeInflight}, Settings{Mode: ModeRate, Quota: 2, Period: time.Second, RejectCode: true})
	if err != nil {
		t.Fatalf("a rate rule with its own RejectCode: %v", err)
	}
	if ru.Mode() != ModeRate {
		t.Fatalf("Mode() = %q, want %q", ru.Mode(), ModeRate)
	}
}

func rateRule(t *testing.T, g *Guard, quota int) *Rule {
	t.Helper()
	ru, err := g.Compile("POST /login", []string{"test"}, Settings{Expire: time.Second, Mode: ModeRate, Quota: quota, Period: time.Minute},
		Settings{})
	if err != nil {
		t.Fatal(err)
	}
	return ru
}

// Serve counts a rate rule's request once, under the key plus the rate
// suffix, without a lock: an admitted one is told to the Admitter, then
// runs unguarded and is delivered, carrying a request key of its own; the
// one over the quota is refused RateLimited with the count's RetryAfter
// and answer.
func TestServeRate(t *testing.T) {
	ctx := context.Background()
	b := newRates()
	g := &Guard{Backend: b}
	ru := rateRule(t, g, 2)
	for i := range 2 {
		x := &admitting{}
		g.Serve(ctx, ru, "zerolock:k", Fingerprint{}, x)
		if !x.ran || !x.unguarded || !x.delivered || x.refused != nil || !x.ranAfter {
			t.Fatalf("request %d: ran %v, unguarded %v, delivered %v, refused %+v, admitted first %v; want admitted, then run unguarded",
				i+1, x.ran, x.unguarded, x.delivered, x.refused, x.ranAfter)
		}
		if x.admitted.Remaining != 1-i || !x.admitted.Admitted {
			t.Fatalf("request %d: Admit got %+v, want %d remaining", i+1, *x.admitted, 1-i)
		}
		if req, ok := RequestFrom(x.runCtx); !ok || req.Key == "zerolock:k" || !strings.HasPrefix(req.Key, "zerolock:k#") {
			t.Fatalf("request %d: the handler's request is %+v, want a key of its own", i+1, req)
		}
	}
	over := &admitting{}
	g.Serve(ctx, ru, "zerolock:k", Fingerprint{}, over)
	want := Refusal{Reason: RateLimited, RetryAfter: b.retryAfter, Rate: zerolock.RateResult{RetryAfter: b.retryAfter, Reset: time.Minute}}
	if over.ran || over.admitted != nil || over.refused == nil || *over.refused != want {
		t.Fatalf("over the quota: ran %v, refused %+v; want %+v", over.ran, over.refused, want)
	}
	if b.counts["zerolock:k"+rateSuffix] != 2 || b.counts["zerolock:k"] != 0 {
		t.Fatalf("counts %v, want 2 under %q, apart from the lock key", b.counts, "zerolock:k"+rateSuffix)
	}
	plain := &exchange{}
	g.Serve(ctx, ru, "zerolock:other", Fingerprint{}, plain)
	if !plain.ran {
		t.Fatal("an exchange that is no Admitter was not run")
	}
}

// A rate store that is down refuses the request Unavailable, or with
// FailOpen runs it uncounted; a misconfigured store and a request that
// ended are never served uncounted; a backend that cannot count (Compile
// refuses it) is Unavailable even with FailOpen.
func TestServeRateStoreFailures(t *testing.T) {
	misconfigured := fmt.Errorf("redislock: rate %q: key holds a value that is not a rate log: %w", "k", zerolock.ErrMisconfigured)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		err      error
		failOpen bool
		wantRun  bool
	}{
		{"down", context.Background(), errStore, false, false},
		{"down, fail open", context.Background(), errStore, true, true},
		{"misconfigured, fail open", context.Background(), misconfigured, true, false},
		{"request ended, fail open", ended, fmt.Errorf("rate: %w", context.Canceled), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newRates()
			b.err = tc.err
			g := &Guard{Backend: b, FailOpen: tc.failOpen}
			x := &exchange{}
			g.Serve(tc.ctx, rateRule(t, g, 1), "k", Fingerprint{}, x)
			if tc.wantRun {
				if !x.ran || !x.unguarded || !x.delivered || x.refused != nil {
					t.Fatalf("ran %v, unguarded %v, delivered %v, refused %+v; want run unguarded", x.ran, x.unguarded, x.delivered, x.refused)
				}
				return
			}
			if x.ran || x.refused == nil || x.refused.Reason != Unavailable {
				t.Fatalf("ran %v, refused %+v; want Unavailable", x.ran, x.refused)
			}
		})
	}

	g := &Guard{Backend: mutexes{}, FailOpen: true}
	x := &exchange{}
	g.Serve(context.Background(), &Rule{Label: "POST /login", Policy: Policy{Quota: 1, Period: time.Second}}, "k", Fingerprint{}, x)
	if x.ran || x.refused == nil || x.refused.Reason != Unavailable {
		t.Fatalf("no rate backend: ran %v, refused %+v; want Unavailable", x.ran, x.refused)
	}
}
