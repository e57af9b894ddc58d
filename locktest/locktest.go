package locktest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

// Defaults of Options.
const (
	// DefaultExpiry is the expiry of the checks that wait for a hold to
	// expire, when Options.Expiry is unset.
	DefaultExpiry = 300 * time.Millisecond
	// DefaultSlack is how late the suite accepts what should happen at
	// once, when Options.Slack is unset.
	DefaultSlack = 5 * time.Second
)

// Options say what a deployment claims and what its lock service needs.
// The zero value claims a plain Locker on a service that keeps expiry
// exactly.
type Options struct {
	// Expiry is the expiry of the checks that wait for a hold to expire
	// (Expiry, Reentrant, Watcher/KeepsHold): the smallest the service
	// honours, so the suite stays fast. Zero means DefaultExpiry.
	Expiry time.Duration
	// ExpiryUnit is the unit the service counts expiry in: a hold lasts
	// Expiry rounded up to it (etcd's leases: time.Second). Zero means
	// exact.
	ExpiryUnit time.Duration
	// ExpiryLag is how long after its rounded-up expiry the service may
	// take to end a hold (etcd revokes expired leases on a 500 ms tick).
	// Zero means at once.
	ExpiryLag time.Duration
	// Slack bounds how late the suite accepts what should happen at once:
	// a waiter woken by a release, an expired hold taken over, a wait that
	// ends. A correct deployment never waits for it, so it only makes
	// failures slower. Zero means DefaultSlack.
	Slack time.Duration

	// Waiter claims that the Lockers are zerolock.Waiters.
	Waiter bool
	// TTLer claims that the Lockers are zerolock.TTLers.
	TTLer bool
	// Watcher claims that the Lockers are zerolock.Watchers.
	Watcher bool
	// Refresher claims that the Lockers are zerolock.Refreshers.
	Refresher bool
	// Fencer claims that Lockers made with LockerOptions.Fencing are
	// zerolock.Fencers. Every check then asks for fencing.
	Fencer bool
}

func (o Options) withDefaults() Options {
	if o.Expiry <= 0 {
		o.Expiry = DefaultExpiry
	}
	if o.Slack <= 0 {
		o.Slack = DefaultSlack
	}
	return o
}

// held is how long a hold of Options.Expiry lasts at most, once the
// service rounded it up and took its time to end it.
func (o Options) held() time.Duration {
	return roundUp(o.Expiry, o.ExpiryUnit) + o.ExpiryLag
}

// roundUp rounds d up to a multiple of unit; a unit of zero leaves d.
func roundUp(d, unit time.Duration) time.Duration {
	if unit <= 0 {
		return d
	}
	return (d + unit - 1) / unit * unit
}

const (
	// holdExpiry is the expiry of the checks that do not wait for one: no
	// hold of theirs expires while they run, however slow the machine.
	// Whole seconds, so no service rounds it.
	holdExpiry = 30 * time.Second
	// checkTimeout bounds every call a check makes, so a hung call fails
	// the check instead of the test binary.
	checkTimeout = time.Minute
	// pollEvery is the gap between the tries of a check that polls.
	pollEvery = 10 * time.Millisecond
	// clockSlop is what the suite forgives a service that keeps time in
	// milliseconds when it decides that a hold ended too early.
	clockSlop = 2 * time.Millisecond
	// stillWaiting is how long a waiter must keep waiting on a held lock
	// before the check releases or cancels it.
	stillWaiting = 100 * time.Millisecond
)

// Run runs the conformance suite against the Backends newBackend makes,
// one subtest per check. newBackend is called once per check, with the
// check's *testing.T; it may return the same Backend every time. Lockers
// of one key from one Backend must exclude each other; the suite makes all
// of a check's Lockers from one Backend.
func Run(t *testing.T, newBackend func(t *testing.T) zerolock.Backend, opts Options) {
	t.Helper()
	s := &suite{newBackend: newBackend, opts: opts.withDefaults()}
	checks := []struct {
		name string
		run  func(*testing.T)
	}{
		{"Abilities", s.abilities},
		{"MutualExclusion", s.mutualExclusion},
		{"BusyIsNotAnError", s.busyIsNotAnError},
		{"ReleaseByNonHolder", s.releaseByNonHolder},
		{"ReleaseThenAcquire", s.releaseThenAcquire},
		{"Reentrant", s.reentrant},
		{"CancelledContext", s.cancelledContext},
		{"Expiry", s.expiry},
		{"Waiter", s.waiter},
		{"TTLer", s.ttler},
		{"Watcher", s.watcher},
		{"Fencer", s.fencer},
		{"Refresher", s.refresher},
	}
	for _, c := range checks {
		t.Run(c.name, c.run)
	}
}

// suite is one Run.
type suite struct {
	newBackend func(t *testing.T) zerolock.Backend
	opts       Options
}

// fixture is what one check works with: a Backend, a key nobody else
// uses, and a context bounding its calls.
type fixture struct {
	t       *testing.T
	opts    Options
	backend zerolock.Backend
	key     string
	ctx     context.Context
}

func (s *suite) fixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), checkTimeout)
	t.Cleanup(cancel)
	return &fixture{t: t, opts: s.opts, backend: s.newBackend(t), key: uniqueKey(t), ctx: ctx}
}

// uniqueKey is a key of t's own, unique per run: the test's name (without
// slashes, which some services read as a hierarchy) and random bytes.
func uniqueKey(t *testing.T) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "zerolock-conformance:" + strings.ReplaceAll(t.Name(), "/", ":") + ":" + hex.EncodeToString(b)
}

// locker returns a new Locker on the fixture's key, released when the
// check ends (which also stops its Watch), so no hold outlives the check.
func (f *fixture) locker(expiry time.Duration) zerolock.Locker {
	f.t.Helper()
	l := f.backend.NewLocker(f.key, zerolock.LockerOptions{Expiry: expiry, Fencing: f.opts.Fencer})
	if l == nil {
		f.t.Fatal("NewLocker returned nil")
	}
	f.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
		defer cancel()
		_, _ = l.ReleaseCtx(ctx)
	})
	return l
}

// mustAcquire fails the check unless l's AcquireCtx reports (true, nil).
func (f *fixture) mustAcquire(l zerolock.Locker, who string) {
	f.t.Helper()
	if ok, err := l.AcquireCtx(f.ctx); !ok || err != nil {
		f.t.Fatalf("%s: AcquireCtx = %v, %v; want true, nil", who, ok, err)
	}
}

// mustBeBusy fails the check unless l's AcquireCtx reports (false, nil).
func (f *fixture) mustBeBusy(l zerolock.Locker, who string) {
	f.t.Helper()
	if ok, err := l.AcquireCtx(f.ctx); ok || err != nil {
		f.t.Fatalf("%s: AcquireCtx = %v, %v; want false, nil (another Locker holds the key)", who, ok, err)
	}
}

// mustRelease fails the check unless l's ReleaseCtx reports want with a
// nil error.
func (f *fixture) mustRelease(l zerolock.Locker, want bool, who string) {
	f.t.Helper()
	if ok, err := l.ReleaseCtx(f.ctx); ok != want || err != nil {
		f.t.Fatalf("%s: ReleaseCtx = %v, %v; want %v, nil", who, ok, err, want)
	}
}

// probe tries l once and reports whether it got the lock and when the
// answer came; an error fails the check.
func (f *fixture) probe(l zerolock.Locker, who string) (bool, time.Time) {
	f.t.Helper()
	ok, err := l.AcquireCtx(f.ctx)
	if err != nil {
		f.t.Fatalf("%s: AcquireCtx = %v, %v; want no error from a healthy service", who, ok, err)
	}
	return ok, time.Now()
}

// sleepUntil sleeps until t: pacing for the checks that must let time
// pass, never to wait for another goroutine.
func sleepUntil(t time.Time) {
	time.Sleep(time.Until(t))
}
