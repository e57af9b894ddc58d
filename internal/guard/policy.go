package guard

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The lock modes both transports accept.
const (
	ModeInflight = "inflight"
	ModeWindow   = "window"
	ModeReplay   = "replay"
	ModeLimit    = "limit"
	ModeRate     = "rate"
)

// DefaultRetain is how long replay mode keeps a completed result.
const DefaultRetain = 24 * time.Hour

// DefaultMaxHoldFactor is MaxHold's default, in multiples of the rule's
// Expire: renewal keeps a running handler's hold for at most ten times its
// expiry (50s at the default 5s), so that a hung handler cannot hold its
// key forever.
const DefaultMaxHoldFactor = 10

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
	// Permits, in limit mode, is how many requests of one key run at once:
	// the lock is a semaphore of that many permits (each expiring after
	// Expire on its own), released when the handler returns. It is zero
	// in the other modes.
	Permits int
	// Renew keeps the hold (a lock, or a limit mode permit) alive while the
	// handler runs, in every mode, so that Expire only bounds how long a
	// crashed process keeps a key; MaxHold bounds it.
	Renew   bool
	MaxHold time.Duration
	// Wait, in replay mode, is how long a duplicate that finds the first
	// request running waits for its result (zerolock.RecordWaiter) before
	// it is refused; 0 refuses at once.
	Wait time.Duration
	// Quota and Period, in rate mode, are the rate: at most Quota requests
	// of one key are admitted in any Period-long window
	// (zerolock.RateBackend). No lock is taken, so nothing is renewed,
	// and Expire is Period, how long a key outlives its last admission.
	// Quota is zero in the other modes.
	Quota  int
	Period time.Duration
}

// Settings are the lock settings of a configuration, the defaults of its
// rules, or those one rule overrides (zero fields for none).
type Settings struct {
	Expire  time.Duration
	Mode    string
	Permits int
	// Retain is replay mode's; Compile applies it.
	Retain time.Duration
	// DisableRenew turns renewal off (it is on by default); MaxHold bounds
	// it (default DefaultMaxHoldFactor × Expire).
	DisableRenew bool
	MaxHold      time.Duration
	// Renew is the setting of configurations written before renewal became
	// the default: accepted, and refused only beside DisableRenew.
	Renew bool
	// Wait is replay mode's; Compile applies it.
	Wait time.Duration
	// Quota and Period are rate mode's: on the configuration, the rate of
	// its rules in rate mode that do not set their own.
	Quota  int
	Period time.Duration
	// RejectCode, on a rule's Settings, says that the rule sets its own
	// answer to a refused duplicate; Compile refuses it in limit mode,
	// which refuses no duplicate. In rate mode the transport decides: gRPC
	// answers a refusal with it, REST always with 429.
	RejectCode bool
	// SharedKeys says that the keys are shared by different callers on
	// purpose, on the configuration or on the rule: a replay rule then
	// need not name its caller (see Compile), and Rule.Shared is set.
	SharedKeys bool
	// NamesCaller, on a rule's Settings, says that one of its keys names
	// the caller (which keys do is the transport's to say: see
	// Guard.CallerKeys); Compile refuses a replay rule without it, unless
	// SharedKeys.
	NamesCaller bool
}

// ResolvePolicy applies a rule's overrides to the configuration's defaults
// and validates the result. Limit mode needs Permits of at least 1, from
// the rule or the defaults; Permits on a rule in another mode is refused,
// since it would do nothing. Rate mode needs a Quota of at least 1 and a
// Period of at least 1ms, likewise; Quota or Period on a rule in another
// mode is refused, and so are the settings of a held lock (Expire,
// DisableRenew, MaxHold) on a rule in rate mode. The errors wrap
// ErrBadPolicy.
func ResolvePolicy(defaults, rule Settings) (Policy, error) {
	expire, mode, permits := defaults.Expire, defaults.Mode, defaults.Permits
	if rule.Expire != 0 {
		expire = rule.Expire
	}
	if rule.Mode != "" {
		mode = rule.Mode
	}
	if rule.Permits != 0 {
		permits = rule.Permits
	}
	switch {
	case expire < time.Millisecond:
		return Policy{}, fmt.Errorf("%w: expire %v must be at least 1ms", ErrBadPolicy, expire)
	case defaults.Permits < 0 || rule.Permits < 0:
		return Policy{}, fmt.Errorf("%w: Permits %d must not be negative", ErrBadPolicy, min(defaults.Permits, rule.Permits))
	case defaults.Quota < 0 || rule.Quota < 0:
		return Policy{}, fmt.Errorf("%w: Quota %d must not be negative", ErrBadPolicy, min(defaults.Quota, rule.Quota))
	case defaults.Period < 0 || rule.Period < 0:
		return Policy{}, fmt.Errorf("%w: Period %v must not be negative", ErrBadPolicy, min(defaults.Period, rule.Period))
	case mode != ModeLimit && rule.Permits != 0:
		return Policy{}, fmt.Errorf("%w: Permits is for limit mode only (this rule is in %s mode): set Mode: limit, or remove it",
			ErrBadPolicy, mode)
	}
	if rate := rateSettings(rule); mode != ModeRate && rate != "" {
		return Policy{}, fmt.Errorf("%w: %s %s for rate mode only (this rule is in %s mode): set Mode: rate, or remove %s",
			ErrBadPolicy, rate, isAre(strings.Count(rate, " and ")+1), mode, itThem(strings.Count(rate, " and ")+1))
	}
	if mode == ModeRate {
		return resolveRate(expire, defaults, rule)
	}
	renew, maxHold, err := resolveRenew(expire, defaults, rule)
	if err != nil {
		return Policy{}, err
	}
	p := Policy{Expire: expire, Renew: renew, MaxHold: maxHold}
	switch mode {
	case ModeInflight:
	case ModeWindow:
		p.Window = true
	case ModeReplay:
		p.Replay, p.Retain = true, DefaultRetain
	case ModeLimit:
		if permits < 1 {
			return Policy{}, fmt.Errorf("%w: limit mode needs Permits of at least 1, "+
				"the number of requests of one key that may run at once (Permits: 2, say)", ErrBadPolicy)
		}
		p.Permits = permits
	default:
		return Policy{}, fmt.Errorf("%w: unknown mode %q (inflight, window, replay, limit or rate)", ErrBadPolicy, mode)
	}
	return p, nil
}

// rateSettings names the rate settings s sets: "Quota", "Period", "Quota
// and Period", or "".
func rateSettings(s Settings) string {
	var set []string
	if s.Quota != 0 {
		set = append(set, "Quota")
	}
	if s.Period != 0 {
		set = append(set, "Period")
	}
	return strings.Join(set, " and ")
}

// MaxQuota bounds a rate rule's Quota: a rate key holds one sorted-set
// entry (about 120 bytes) per admission of its last Period, and entries
// admitted in a burst leave together, in one command that blocks the
// server for every user of it.
const MaxQuota = 100000

// resolveRate is ResolvePolicy in rate mode: the rule's Quota and Period,
// else the configuration's, checked; a rule's settings of a held lock are
// refused, since a rate rule holds none, and the configuration's are
// checked as for the other modes' rules.
func resolveRate(expire time.Duration, defaults, rule Settings) (Policy, error) {
	quota, period := defaults.Quota, defaults.Period
	if rule.Quota != 0 {
		quota = rule.Quota
	}
	if rule.Period != 0 {
		period = rule.Period
	}
	switch {
	case quota < 1:
		return Policy{}, fmt.Errorf("%w: rate mode needs a Quota of at least 1 (it is %d), the number of requests "+
			"of one key admitted per Period (Quota: 5, say)", ErrBadPolicy, quota)
	case quota > MaxQuota:
		return Policy{}, fmt.Errorf("%w: Quota %d is over %d: a rate key keeps one entry per admission of its Period, "+
			"and dropping that many at once stalls Redis for every user of it: use a shorter Period with a smaller "+
			"Quota, or keys that split the traffic more finely", ErrBadPolicy, quota, MaxQuota)
	case period == 0:
		return Policy{}, fmt.Errorf("%w: rate mode needs a Period, the window Quota counts in (Period: 1m, say)", ErrBadPolicy)
	case period < time.Millisecond:
		return Policy{}, fmt.Errorf("%w: Period %v must be at least 1ms", ErrBadPolicy, period)
	case rule.Expire != 0:
		return Policy{}, fmt.Errorf("%w: Expire is the lifetime of a lock, and a rate rule takes none "+
			"(its window is Period): remove Expire from this rule", ErrBadPolicy)
	case rule.DisableRenew || rule.MaxHold != 0:
		return Policy{}, fmt.Errorf("%w: DisableRenew and MaxHold bound the renewal of a held lock, and a rate rule "+
			"holds none: remove them from this rule", ErrBadPolicy)
	}
	if _, _, err := resolveRenew(expire, defaults, Settings{}); err != nil {
		return Policy{}, err
	}
	return Policy{Expire: period, Quota: quota, Period: period}, nil
}

// resolveRenew applies DisableRenew and MaxHold: renewal is on unless the
// configuration or the rule turns it off, and bounded by the rule's
// MaxHold, else the configuration's, else DefaultMaxHoldFactor × expire.
func resolveRenew(expire time.Duration, defaults, rule Settings) (renew bool, maxHold time.Duration, err error) {
	for _, s := range []Settings{defaults, rule} {
		switch {
		case s.MaxHold < 0:
			return false, 0, fmt.Errorf("%w: MaxHold %v must not be negative", ErrBadPolicy, s.MaxHold)
		case s.Renew && s.DisableRenew:
			return false, 0, fmt.Errorf("%w: Renew and DisableRenew contradict each other; renewal is the default, "+
				"so remove Renew (or DisableRenew, to keep renewing)", ErrBadPolicy)
		case s.MaxHold != 0 && s.DisableRenew:
			return false, 0, fmt.Errorf("%w: MaxHold bounds the renewal that DisableRenew turns off: remove one of them",
				ErrBadPolicy)
		}
	}
	if defaults.DisableRenew && rule.MaxHold != 0 {
		return false, 0, fmt.Errorf("%w: the rule's MaxHold bounds the renewal that the configuration's DisableRenew "+
			"turns off: remove one of them", ErrBadPolicy)
	}
	if defaults.DisableRenew || rule.DisableRenew {
		return false, 0, nil
	}
	maxHold = defaults.MaxHold
	if rule.MaxHold != 0 {
		maxHold = rule.MaxHold
	}
	if maxHold == 0 {
		return true, DefaultMaxHoldFactor * expire, nil
	}
	if maxHold < expire {
		return false, 0, fmt.Errorf("%w: MaxHold %v is shorter than Expire %v, so the hold would never be renewed: "+
			"raise MaxHold (the default is %d × Expire), or set DisableRenew: true", ErrBadPolicy, maxHold, expire, DefaultMaxHoldFactor)
	}
	return true, maxHold, nil
}

// KeepAfter reports whether the lock stays held after the handler ended:
// only in window mode, and only when the handler returned (no panic) and
// did not fail, so that the user's retry of a failure is not blocked.
func (p Policy) KeepAfter(returned, failed bool) bool {
	return p.Window && returned && !failed
}
