package guard

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

// watchedLock is a lock that reports its watches and refreshes: Watch
// sends the watch's context on watched and returns one that ends with it.
type watchedLock struct {
	watched   chan context.Context
	refreshed atomic.Int32
	released  atomic.Int32
}

func (l *watchedLock) NewLocker(string, zerolock.LockerOptions) zerolock.Locker { return l }

func (l *watchedLock) AcquireCtx(context.Context) (bool, error) { return true, nil }

func (l *watchedLock) ReleaseCtx(context.Context) (bool, error) {
	l.released.Add(1)
	return true, nil
}

func (l *watchedLock) RefreshCtx(context.Context) (bool, error) {
	l.refreshed.Add(1)
	return true, nil
}

func (l *watchedLock) Watch(ctx context.Context, _ ...zerolock.WatchOption) context.Context {
	l.watched <- ctx
	return ctx
}

// A handler that returns within a third of the expiry starts no watch; one
// that runs longer is watched from then on, and in window mode its hold is
// extended once to the full expiry when it returns, and the watch stopped;
// otherwise the release ends it.
func TestRenewal(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name                string
		window, slow        bool
		refreshes, releases int32
	}{
		{"fast, inflight", false, false, 0, 1},
		{"fast, window", true, false, 0, 0},
		{"slow, inflight", false, true, 0, 1},
		{"slow, window", true, true, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &watchedLock{watched: make(chan context.Context, 1)}
			g := &Guard{Backend: l}
			expire := time.Hour // the timer never fires by itself
			if tc.slow {
				expire = 30 * time.Millisecond
			}
			res := g.Acquire(ctx, "label", "key", Policy{Expire: expire, Window: tc.window, Renew: true, MaxHold: 10 * expire})
			if res.Outcome != Acquired {
				t.Fatalf("outcome %q", res.Outcome)
			}
			var watchCtx context.Context
			if tc.slow {
				watchCtx = <-l.watched // the handler is still running
			}
			res.Lease.End(ctx, tc.window)
			if got := l.refreshed.Load(); got != tc.refreshes {
				t.Fatalf("refreshed %d times, want %d", got, tc.refreshes)
			}
			if got := l.released.Load(); got != tc.releases {
				t.Fatalf("released %d times, want %d", got, tc.releases)
			}
			if watchCtx != nil && watchCtx.Err() == nil {
				t.Fatal("the watch outlived the lease")
			}
			select {
			case <-res.Ctx.Done():
			default:
				t.Fatal("the handler's context outlived the lease")
			}
			select {
			case <-l.watched:
				t.Fatal("a watch started after the lease ended")
			default:
			}
		})
	}
}

// Renewal's settings: on by default and bounded by 10 × Expire; conflicts
// within a level or across levels are refused, naming the fix.
func TestResolveRenew(t *testing.T) {
	base := Settings{Expire: time.Second, Mode: ModeInflight}
	with := func(f func(*Settings)) Settings { s := base; f(&s); return s }
	p, err := ResolvePolicy(base, Settings{})
	if err != nil || !p.Renew || p.MaxHold != 10*time.Second {
		t.Fatalf("defaults: %+v, %v; want renewal bounded by 10s", p, err)
	}
	for _, tc := range []struct {
		name          string
		defaults, rul Settings
		mention       string
	}{
		{"conf DisableRenew, rule MaxHold", with(func(s *Settings) { s.DisableRenew = true }), Settings{MaxHold: time.Minute}, "remove one of them"},
		{"rule DisableRenew and MaxHold", base, Settings{DisableRenew: true, MaxHold: time.Minute}, "remove one of them"},
		{"Renew and DisableRenew", with(func(s *Settings) { s.Renew, s.DisableRenew = true, true }), Settings{}, "remove Renew"},
		{"MaxHold under Expire", base, Settings{MaxHold: time.Millisecond * 500}, "raise MaxHold"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ResolvePolicy(tc.defaults, tc.rul)
			if !errors.Is(err, ErrBadPolicy) || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err = %v, want ErrBadPolicy mentioning %q", err, tc.mention)
			}
		})
	}
}
