package locktest

import (
	"testing"
	"time"

	"github.com/zerolock/zerolock"
)

// abilities: the Lockers have exactly the optional abilities the
// deployment claims. A claimed ability they lack is refused by the
// middleware at start-up; an ability they have and nobody claims goes
// unchecked. Fencing is the exception: a Locker made without
// LockerOptions.Fencing may be a Fencer that mints nothing, so only a
// claimed Fencer that is missing fails.
func (s *suite) abilities(t *testing.T) {
	f := s.fixture(t)
	l := f.locker(holdExpiry)
	_, waiter := l.(zerolock.Waiter)
	_, ttler := l.(zerolock.TTLer)
	_, watcher := l.(zerolock.Watcher)
	_, fencer := l.(zerolock.Fencer)
	_, refresher := l.(zerolock.Refresher)
	for _, a := range []struct {
		name             string
		claimed, has     bool
		unclaimedIsError bool
	}{
		{"Waiter", s.opts.Waiter, waiter, true},
		{"TTLer", s.opts.TTLer, ttler, true},
		{"Watcher", s.opts.Watcher, watcher, true},
		{"Fencer", s.opts.Fencer, fencer, false},
		{"Refresher", s.opts.Refresher, refresher, true},
	} {
		switch {
		case a.claimed && !a.has:
			t.Errorf("Options.%s claims the ability, but the Locker (%T) is not a zerolock.%s", a.name, l, a.name)
		case !a.claimed && a.has && a.unclaimedIsError:
			t.Errorf("the Locker (%T) is a zerolock.%s, but Options.%s does not claim it, so it goes unchecked", l, a.name, a.name)
		}
	}
}

// ttler: TTL reports the remaining time of whoever holds the lock, to its
// holder and to any other Locker of the key: more than zero and no more
// than the expiry (rounded up as the service counts it) while held, zero
// or less when free.
func (s *suite) ttler(t *testing.T) {
	if !s.opts.TTLer {
		t.Skip("Options.TTLer does not claim the ability")
	}
	f := s.fixture(t)
	a, b := f.locker(holdExpiry), f.locker(holdExpiry)
	ta, tb := ttlerOf(t, a), ttlerOf(t, b)
	ttl := func(l zerolock.TTLer, who string) time.Duration {
		t.Helper()
		d, err := l.TTL(f.ctx)
		if err != nil {
			t.Fatalf("%s: TTL = %v, %v; want no error from a healthy service", who, d, err)
		}
		return d
	}
	if d := ttl(ta, "A on a free key"); d > 0 {
		t.Errorf("A: TTL of a key nobody ever held = %v; want zero or less", d)
	}
	f.mustAcquire(a, "A on a free key")
	most := roundUp(holdExpiry, s.opts.ExpiryUnit)
	if d := ttl(ta, "A, the holder"); d <= 0 || d > most {
		t.Errorf("A: TTL of its own hold with expiry %v = %v; want in (0, %v]", holdExpiry, d, most)
	}
	if d := ttl(tb, "B while A holds"); d <= 0 || d > most {
		t.Errorf("B: TTL of A's hold with expiry %v = %v; want in (0, %v]", holdExpiry, d, most)
	}
	f.mustRelease(a, true, "A, the holder")
	if d := ttl(ta, "A after its release"); d > 0 {
		t.Errorf("A: TTL after A released = %v; want zero or less", d)
	}
	if d := ttl(tb, "B after A's release"); d > 0 {
		t.Errorf("B: TTL after A released = %v; want zero or less", d)
	}
}

// ttlerOf returns l as a TTLer, failing the check when it is not one.
func ttlerOf(t *testing.T, l zerolock.Locker) zerolock.TTLer {
	t.Helper()
	ttler, ok := l.(zerolock.TTLer)
	if !ok {
		t.Fatalf("Options.TTLer claims the ability, but the Locker (%T) is not a zerolock.TTLer", l)
	}
	return ttler
}

// fencer: a Locker that never acquired has token zero, and successive
// acquisitions of the key by different Lockers get strictly increasing
// tokens.
func (s *suite) fencer(t *testing.T) {
	if !s.opts.Fencer {
		t.Skip("Options.Fencer does not claim the ability")
	}
	f := s.fixture(t)
	lockers := []zerolock.Locker{f.locker(holdExpiry), f.locker(holdExpiry), f.locker(holdExpiry)}
	names := []string{"A", "B", "C"}
	if got := fence(t, lockers[0]); got != 0 {
		t.Errorf("A: Fence() of a Locker that never acquired = %d; want 0", got)
	}
	var prev int64
	prevName := "nobody"
	for _, i := range []int{0, 1, 0, 2, 1} {
		l, name := lockers[i], names[i]
		f.mustAcquire(l, name+" on a free key")
		got := fence(t, l)
		if got <= prev {
			t.Errorf("%s: Fence() = %d after %s's %d; want greater", name, got, prevName, prev)
		}
		prev, prevName = got, name
		f.mustRelease(l, true, name+", the holder")
	}
}
