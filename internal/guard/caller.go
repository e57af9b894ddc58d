package guard

import "fmt"

// checkCaller refuses a replay rule none of whose keys names its caller,
// unless the configuration or the rule says its keys are shared on
// purpose: replay hands the stored result to whoever sends the key, so a
// key that one caller chooses (an Idempotency-Key header) and another can
// send again would hand the first caller's result to the second. The
// error wraps ErrBadPolicy and names the fix in the transport's terms
// (g.CallerKeys).
func (g *Guard) checkCaller(p Policy, defaults, rule Settings) error {
	if !p.Replay || rule.NamesCaller || defaults.SharedKeys || rule.SharedKeys {
		return nil
	}
	keys := g.CallerKeys
	if keys == "" {
		keys = "a key that names the caller"
	}
	return fmt.Errorf("%w: none of this rule's keys names the caller, so replay mode would hand the result "+
		"stored for one caller to any other who sends the same key: add %s to Keys, "+
		"or set SharedKeys: true if these keys are shared by different callers on purpose", ErrBadPolicy, keys)
}
