package guard

import (
	"errors"
	"fmt"

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
		return g.Backend.NewLocker(key, zerolock.LockerOptions{Expiry: policy.Expire, Fencing: g.Fence, Name: label,
			Waited: policy.Wait > 0}), nil
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
