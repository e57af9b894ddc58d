package guard

import (
	"errors"
	"fmt"
	"time"

	"github.com/zerolock/zerolock"
)

// Limited: in limit mode, every permit of the key is held, so the request
// is refused (Result.RetryAfter says when the next permit frees by
// expiry at the latest).
const Limited Outcome = "limited"

// errNoSemaphores is the error of a limit-mode acquisition on a backend
// that makes no semaphores, which CheckLimit refuses at start-up.
var errNoSemaphores = errors.New("guard: limit mode needs a zerolock.SemaphoreBackend")

// newLock returns the lock of key under policy, named label: a semaphore
// of policy.Permits in limit mode, otherwise the backend's Locker. Its
// error is a misconfiguration, never an outage.
func (g *Guard) newLock(label, key string, policy Policy) (zerolock.Locker, error) {
	if policy.Permits == 0 {
		return g.Backend.NewLocker(key, zerolock.LockerOptions{Expiry: policy.Expire, Fencing: g.Fence, Name: label}), nil
	}
	sb, ok := g.Backend.(zerolock.SemaphoreBackend)
	if !ok {
		return nil, fmt.Errorf("%w (%T is not one)", errNoSemaphores, g.Backend)
	}
	// A semaphore's holders share the key, so no fencing token orders them;
	// CheckLimit refuses Fence with limit mode.
	return sb.NewSemaphore(key+limitSuffix, policy.Permits, zerolock.LockerOptions{Expiry: policy.Expire, Name: label})
}

// limitSuffix puts a limit rule's semaphores in a namespace of their own:
// a deploy that switches a route between a lock mode and limit mode while
// keys are live never finds the other kind's value under its key (a
// semaphore would refuse a lock's string, and a lock's GET would fail on a
// semaphore's sorted set).
const limitSuffix = ":limit"

// CheckLimit tells whether the backend can serve a rule in limit mode: it
// must be a zerolock.SemaphoreBackend (a Redis store backend is; Redlock,
// etcd and ZooKeeper backends are not), whose semaphores can renew when
// Renew is set. Fence is refused: up to Permits requests hold one key at
// once, so a fencing token would order nothing. The errors wrap
// ErrBadPolicy and name the fix.
func (g *Guard) CheckLimit() error {
	if g.Fence {
		return fmt.Errorf("%w: Fence cannot be used in limit mode: up to Permits requests hold one key at once, "+
			"so no fencing token orders them; use inflight mode for a fenced route", ErrBadPolicy)
	}
	sb, ok := g.Backend.(zerolock.SemaphoreBackend)
	if !ok {
		return fmt.Errorf("%w: limit mode needs a lock backend that makes semaphores (%T cannot: "+
			"Redlock, etcd and ZooKeeper backends cannot); use a Redis store backend "+
			"(a go-zero store or go-redis client, redislock.StoreBackend)", ErrBadPolicy, g.Backend)
	}
	sem, err := sb.NewSemaphore(checkName, 1, zerolock.LockerOptions{Expiry: time.Second, Name: checkName})
	if err != nil {
		return fmt.Errorf("%w: limit mode: %v", ErrBadPolicy, err)
	}
	if _, ok := sem.(zerolock.Watcher); g.Renew && !ok {
		return fmt.Errorf("%w: Renew needs a lock backend whose semaphores can renew (%T cannot)", ErrBadPolicy, sem)
	}
	return nil
}
