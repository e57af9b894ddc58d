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

// semaphores is an in-memory zerolock.SemaphoreBackend: each key counts
// its holders up to its permits; a permit never expires.
type semaphores struct {
	mu      sync.Mutex
	holders map[string]int
	ttl     time.Duration // what TTL reports when every permit is held
}

func newSemaphores(ttl time.Duration) *semaphores {
	return &semaphores{holders: make(map[string]int), ttl: ttl}
}

func (s *semaphores) NewLocker(string, zerolock.LockerOptions) zerolock.Locker {
	panic("a limit rule asked for a mutex")
}

func (s *semaphores) NewSemaphore(key string, permits int, _ zerolock.LockerOptions) (zerolock.Locker, error) {
	if permits < 1 {
		return nil, errors.New("permits < 1")
	}
	return &permit{s: s, key: key, permits: permits}, nil
}

type permit struct {
	s       *semaphores
	key     string
	permits int
	held    bool
}

func (p *permit) AcquireCtx(context.Context) (bool, error) {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	if p.held || p.s.holders[p.key] >= p.permits {
		return false, nil
	}
	p.s.holders[p.key]++
	p.held = true
	return true, nil
}

func (p *permit) ReleaseCtx(context.Context) (bool, error) {
	p.s.mu.Lock()
	defer p.s.mu.Unlock()
	if !p.held {
		return false, nil
	}
	p.s.holders[p.key]--
	p.held = false
	return true, nil
}

func (p *permit) TTL(context.Context) (time.Duration, error) {
	return p.s.ttl, nil
}

// mutexes is a Backend without semaphores, as Redlock, etcd and ZooKeeper
// backends are.
type mutexes struct{}

func (mutexes) NewLocker(string, zerolock.LockerOptions) zerolock.Locker { return failing{} }

func TestResolvePolicyLimit(t *testing.T) {
	defaults := Settings{Expire: time.Second, Mode: ModeInflight}
	for _, tc := range []struct {
		name          string
		defaults      Settings
		rule          Settings
		permits       int
		wantErr       bool
		errMentioning string
	}{
		{"rule's permits", defaults, Settings{Mode: ModeLimit, Permits: 2}, 2, false, ""},
		{"configuration's permits", Settings{Expire: time.Second, Mode: ModeLimit, Permits: 3}, Settings{}, 3, false, ""},
		{"rule overrides the configuration", Settings{Expire: time.Second, Mode: ModeLimit, Permits: 3}, Settings{Permits: 1}, 1, false, ""},
		{"configuration's permits are the default of limit rules only", Settings{Expire: time.Second, Mode: ModeInflight, Permits: 3}, Settings{}, 0, false, ""},
		{"limit without permits", defaults, Settings{Mode: ModeLimit}, 0, true, "Permits of at least 1"},
		{"negative permits", defaults, Settings{Mode: ModeLimit, Permits: -1}, 0, true, "Permits -1"},
		{"negative default", Settings{Expire: time.Second, Mode: ModeLimit, Permits: -2}, Settings{Permits: 1}, 0, true, "Permits -2"},
		{"permits in inflight mode", defaults, Settings{Permits: 2}, 0, true, "limit mode only"},
		{"permits in window mode", defaults, Settings{Mode: ModeWindow, Permits: 2}, 0, true, "limit mode only"},
		{"permits in replay mode", defaults, Settings{Mode: ModeReplay, Permits: 2}, 0, true, "limit mode only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ResolvePolicy(tc.defaults, tc.rule)
			if tc.wantErr {
				if !errors.Is(err, ErrBadPolicy) || !strings.Contains(err.Error(), tc.errMentioning) {
					t.Fatalf("err = %v, want ErrBadPolicy mentioning %q", err, tc.errMentioning)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if p.Permits != tc.permits || p.Window || p.Replay || p.Expire != time.Second {
				t.Fatalf("policy %+v, want %d permits, inflight-like", p, tc.permits)
			}
		})
	}
}

// In limit mode Acquire takes one of Permits permits per request, refuses
// the next one as Limited (not Rejected) with the semaphore's TTL, and a
// released permit serves the next.
func TestAcquireLimit(t *testing.T) {
	sems := newSemaphores(3 * time.Second)
	g := &Guard{Backend: sems}
	policy := Policy{Expire: 10 * time.Second, Permits: 2}
	ctx := context.Background()
	first, second := g.Acquire(ctx, "export", "k", policy), g.Acquire(ctx, "export", "k", policy)
	if first.Outcome != Acquired || second.Outcome != Acquired {
		t.Fatalf("outcomes %q, %q; want two acquired", first.Outcome, second.Outcome)
	}
	third := g.Acquire(ctx, "export", "k", policy)
	if third.Outcome != Limited || third.RetryAfter != 3*time.Second {
		t.Fatalf("third: %q after %v, want %q after the semaphore's TTL 3s", third.Outcome, third.RetryAfter, Limited)
	}
	if other := g.Acquire(ctx, "export", "other", policy); other.Outcome != Acquired {
		t.Fatalf("another key: %q", other.Outcome)
	}
	first.Lease.End(ctx, false)
	if again := g.Acquire(ctx, "export", "k", policy); again.Outcome != Acquired {
		t.Fatalf("after a release: %q", again.Outcome)
	}
}

// A backend without semaphores that reaches Acquire (CheckLimit refuses it
// at start-up) fails the request as a store error, even with FailOpen: a
// misconfiguration is never served unlocked.
func TestAcquireLimitWithoutSemaphores(t *testing.T) {
	g := &Guard{Backend: mutexes{}, FailOpen: true}
	res := g.Acquire(context.Background(), "export", "k", Policy{Expire: time.Second, Permits: 2})
	if res.Outcome != StoreError || !errors.Is(res.Err, errNoSemaphores) {
		t.Fatalf("outcome %q, err %v; want %q with errNoSemaphores", res.Outcome, res.Err, StoreError)
	}
}

func TestCheckLimit(t *testing.T) {
	renew := Policy{Expire: time.Second, Permits: 1, Renew: true}
	for _, tc := range []struct {
		name    string
		g       Guard
		p       Policy
		mention string
	}{
		{"no semaphores", Guard{Backend: mutexes{}}, Policy{}, "use a Redis store backend"},
		{"fence", Guard{Backend: newSemaphores(time.Second), Fence: true}, Policy{}, "Fence cannot be used in limit mode"},
		{"renew without a watcher", Guard{Backend: newSemaphores(time.Second)}, renew, "set DisableRenew: true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.g.CheckLimit(tc.p)
			if !errors.Is(err, ErrBadPolicy) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err = %v, want ErrBadPolicy mentioning %q", err, tc.mention)
			}
		})
	}
	if err := (&Guard{Backend: newSemaphores(time.Second)}).CheckLimit(Policy{Permits: 1}); err != nil {
		t.Fatalf("a semaphore backend: %v", err)
	}
}

// wrongKind is a SemaphoreBackend whose semaphores find a lock's value
// under their key, as after a deploy that switched a route to limit mode.
type wrongKind struct{ semaphores }

func (w *wrongKind) NewSemaphore(key string, permits int, o zerolock.LockerOptions) (zerolock.Locker, error) {
	return wrongKindPermit{}, nil
}

type wrongKindPermit struct{}

func (wrongKindPermit) AcquireCtx(context.Context) (bool, error) {
	// As redislock's ErrNotSemaphore, a zerolock.ErrMisconfigured.
	return false, fmt.Errorf("redislock: acquire %q: key holds a value that is not a semaphore: %w", "k", zerolock.ErrMisconfigured)
}
func (wrongKindPermit) ReleaseCtx(context.Context) (bool, error) { return false, nil }

// TestLimitNeverFailsOpenOnWrongKind: a key that holds another kind of
// value is a misconfiguration, not an outage, so FailOpen does not serve
// the request unlimited; and limit keys live apart from lock keys.
func TestLimitNeverFailsOpenOnWrongKind(t *testing.T) {
	policy := Policy{Expire: time.Second, Permits: 2}
	g := &Guard{Backend: &wrongKind{}, FailOpen: true}
	if res := g.Acquire(context.Background(), "GET /exports", "zerolock:k", policy); res.Outcome != StoreError {
		t.Fatalf("Outcome = %v (%v); want %v: FailOpen must not serve a misconfigured store unlimited", res.Outcome, res.Err, StoreError)
	}

	sems := newSemaphores(time.Second)
	g = &Guard{Backend: sems}
	res := g.Acquire(context.Background(), "GET /exports", "zerolock:k", policy)
	if res.Outcome != Acquired {
		t.Fatalf("Outcome = %v (%v); want %v", res.Outcome, res.Err, Acquired)
	}
	defer res.Lease.End(context.Background(), false)
	sems.mu.Lock()
	defer sems.mu.Unlock()
	if sems.holders["zerolock:k"+limitSuffix] != 1 || sems.holders["zerolock:k"] != 0 {
		t.Fatalf("holders = %v; want the permit under %q, apart from the lock key", sems.holders, "zerolock:k"+limitSuffix)
	}
}
