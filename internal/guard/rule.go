package guard

import (
	"fmt"
	"strings"
	"time"

	"github.com/zerolock/zerolock/internal/keyspec"
)

// Rule is the lock side of a compiled rule, for Serve: its label, its
// policy, and the namespace of its keys.
type Rule struct {
	// Label names the rule in metrics, logs and the lock's own metrics and
	// spans: "POST /orders", "/pkg.Service/Method".
	Label  string
	Policy Policy
	// Shared says that the rule's keys are shared by different callers on
	// purpose (Settings.SharedKeys, of the configuration or the rule), so
	// the transport does not warn about a rule without a per-caller key.
	Shared bool
	// namespace is what comes before the hash in the rule's keys.
	namespace []string
}

// Key returns the rule's key for the values added to hs: the namespace,
// then the values' hash. It releases hs. A limit rule's semaphore lives
// under the key plus a suffix of its own (see newLock); logs carry the
// key's digest.
func (ru *Rule) Key(hs *keyspec.Hasher) string {
	return hs.Key(ru.namespace...)
}

// Compile resolves a rule's settings against its configuration's defaults
// and checks them with one wording for both transports: the mode and its
// settings (ResolvePolicy; Retain and the transport's replayOnly settings
// outside replay mode, where they would do nothing, silently), the guard's
// Fence against the mode, the backend's abilities against what the rule
// needs (a Recorder for replay mode, semaphores for limit mode, a
// zerolock.RateBackend for rate mode, locks that renew unless
// DisableRenew), and, last, that a replay rule names its
// caller unless its keys are shared on purpose (checkCaller), so that a
// stored result is only replayed to the caller that made the first
// request. label names the rule; namespace is what comes before the hash
// in its keys (the configuration's prefix, the transport, the route or
// method); replayOnly names the replay-only settings of the transport that
// the rule sets. The errors wrap ErrBadPolicy and name the fix; the
// transport adds the rule's label.
func (g *Guard) Compile(label string, namespace []string, defaults, rule Settings, replayOnly ...string) (*Rule, error) {
	policy, err := ResolvePolicy(defaults, rule)
	if err != nil {
		return nil, err
	}
	if !policy.Replay {
		if rule.Wait != 0 {
			replayOnly = append([]string{"Wait"}, replayOnly...)
		}
		if rule.Retain != 0 {
			replayOnly = append([]string{"Retain"}, replayOnly...)
		}
		if len(replayOnly) > 0 {
			return nil, fmt.Errorf("%w: %s %s for replay mode only (this rule is in %s mode): set Mode: replay, or remove %s",
				ErrBadPolicy, strings.Join(replayOnly, " and "), isAre(len(replayOnly)), modeOf(policy), itThem(len(replayOnly)))
		}
	} else {
		// ResolvePolicy set DefaultRetain; the configuration, then the rule,
		// override it.
		if defaults.Retain != 0 {
			policy.Retain = defaults.Retain
		}
		if rule.Retain != 0 {
			policy.Retain = rule.Retain
		}
		if policy.Retain < time.Millisecond {
			return nil, fmt.Errorf("%w: Retain %v must be at least 1ms", ErrBadPolicy, policy.Retain)
		}
		policy.Wait = defaults.Wait
		if rule.Wait != 0 {
			policy.Wait = rule.Wait
		}
		if policy.Wait < 0 {
			return nil, fmt.Errorf("%w: Wait %v must not be negative", ErrBadPolicy, policy.Wait)
		}
	}
	if policy.Permits > 0 && rule.RejectCode {
		return nil, fmt.Errorf("%w: RejectCode answers a refused duplicate, and limit mode refuses none "+
			"(a request over the limit gets limit mode's own refusal): remove RejectCode from this rule", ErrBadPolicy)
	}
	switch {
	case g.Fence && policy.Replay:
		return nil, fmt.Errorf("%w: Fence cannot be used in replay mode: its lock is taken by a script that also "+
			"reads a stored result, and mints no fencing token; use inflight mode where a fencing token is needed", ErrBadPolicy)
	case policy.Quota > 0:
		if err := g.CheckRate(); err != nil {
			return nil, err
		}
	case policy.Permits > 0:
		if err := g.CheckLimit(policy); err != nil {
			return nil, err
		}
	default:
		if err := g.checkPolicy(policy); err != nil {
			return nil, err
		}
	}
	if err := g.checkCaller(policy, defaults, rule); err != nil {
		return nil, err
	}
	return &Rule{Label: label, Policy: policy, Shared: defaults.SharedKeys || rule.SharedKeys, namespace: namespace}, nil
}

// modeOf names policy's mode.
func modeOf(p Policy) string {
	switch {
	case p.Window:
		return ModeWindow
	case p.Replay:
		return ModeReplay
	case p.Permits > 0:
		return ModeLimit
	case p.Quota > 0:
		return ModeRate
	}
	return ModeInflight
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}

func itThem(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// Mode names the rule's mode: ModeInflight, ModeWindow, ModeReplay,
// ModeLimit or ModeRate.
func (r *Rule) Mode() string { return modeOf(r.Policy) }
