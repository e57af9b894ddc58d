package guard

import (
	"errors"
	"fmt"
	"time"
)

// The lock modes both transports accept.
const (
	ModeInflight = "inflight"
	ModeWindow   = "window"
	ModeReplay   = "replay"
)

// DefaultRetain is how long replay mode keeps a completed result.
const DefaultRetain = 24 * time.Hour

// ErrBadPolicy is wrapped by ResolvePolicy's errors.
var ErrBadPolicy = errors.New("guard: bad lock policy")

// Policy is how long a rule's lock lives and when it is released.
type Policy struct {
	Expire time.Duration
	// Window keeps the lock until Expire unless the handler failed;
	// otherwise it is released when the handler returns.
	Window bool
	// Replay stores the handler's result in place of the lock, for Retain,
	// and hands it to retries (Lease.Record); a failure releases the lock.
	Replay bool
	// Retain is how long a replay result is kept; the transports set it.
	Retain time.Duration
}

// ResolvePolicy applies a rule's overrides (zero for none) to the
// configuration's defaults and validates the result.
func ResolvePolicy(expire time.Duration, mode string, ruleExpire time.Duration, ruleMode string) (Policy, error) {
	if ruleExpire != 0 {
		expire = ruleExpire
	}
	if ruleMode != "" {
		mode = ruleMode
	}
	if expire < time.Millisecond {
		return Policy{}, fmt.Errorf("%w: expire %v must be at least 1ms", ErrBadPolicy, expire)
	}
	switch mode {
	case ModeInflight:
		return Policy{Expire: expire}, nil
	case ModeWindow:
		return Policy{Expire: expire, Window: true}, nil
	case ModeReplay:
		return Policy{Expire: expire, Replay: true, Retain: DefaultRetain}, nil
	}
	return Policy{}, fmt.Errorf("%w: unknown mode %q (inflight, window or replay)", ErrBadPolicy, mode)
}

// KeepAfter reports whether the lock stays held after the handler ended:
// only in window mode, and only when the handler returned (no panic) and
// did not fail, so that the user's retry of a failure is not blocked.
func (p Policy) KeepAfter(returned, failed bool) bool {
	return p.Window && returned && !failed
}
