package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/zerolock/zerolock/middleware"
)

// The modes a rule's lockMode may name (middleware.ModeInflight, ...).
const (
	modeInflight = "inflight"
	modeWindow   = "window"
	modeReplay   = "replay"
	modeLimit    = "limit"
	modeRate     = "rate"
)

// keysProperty holds a rule's keys; every other property is "lock" and
// the name of the LockRule field it sets.
const keysProperty = "lock"

// property is one @doc property the plugin knows, and how its value sets
// the rule.
type property struct {
	name string
	set  func(r *rule, value string) string // what is wrong, or ""
}

// properties are the @doc properties of a rule, one per field of
// middleware.LockRule but Method and Path, which come from the route.
var properties = []property{
	{keysProperty, func(r *rule, v string) string { return setList(&r.Keys, v) }},
	{"lockMode", setMode},
	{"lockExpire", func(r *rule, v string) string { return setDuration(&r.Expire, &r.expire, v, time.Millisecond) }},
	{"lockPermits", func(r *rule, v string) string { return setCount(&r.Permits, v) }},
	{"lockQuota", setQuota},
	{"lockPeriod", func(r *rule, v string) string { return setDuration(&r.Period, nil, v, time.Millisecond) }},
	{"lockRateLimitHeaders", func(r *rule, v string) string { return setBool(&r.RateLimitHeaders, v) }},
	{"lockRetain", func(r *rule, v string) string { return setDuration(&r.Retain, nil, v, time.Millisecond) }},
	{"lockDisableRenew", func(r *rule, v string) string { return setBool(&r.DisableRenew, v) }},
	{"lockMaxHold", func(r *rule, v string) string { return setDuration(&r.MaxHold, &r.maxHold, v, 0) }},
	{"lockMaxResponseBytes", setMaxResponseBytes},
	{"lockFingerprint", func(r *rule, v string) string { return setList(&r.Fingerprint, v) }},
	{"lockRejectCode", setRejectCode},
	{"lockMessage", func(r *rule, v string) string { r.Message = v; return "" }},
	{"lockWait", func(r *rule, v string) string { return setDuration(&r.Wait, nil, v, 0) }},
	{"lockSharedKeys", func(r *rule, v string) string { return setBool(&r.SharedKeys, v) }},
	{"lockSkipRouteCheck", func(r *rule, v string) string { return setBool(&r.SkipRouteCheck, v) }},
}

// problem is something wrong with a rule: the @doc property it is about
// ("" for the route as a whole) and what is wrong.
type problem struct {
	property string
	msg      string
}

// isLockProperty reports whether a @doc property is the plugin's to read:
// its name starts with "lock", in any case, so that a misspelt lockmode
// or LockMode is refused rather than ignored.
func isLockProperty(name string) bool {
	return strings.HasPrefix(strings.ToLower(name), keysProperty)
}

// hasLockProperties reports whether a route's @doc declares a rule.
func hasLockProperties(props map[string]string) bool {
	for name := range props {
		if isLockProperty(name) {
			return true
		}
	}
	return false
}

// parseProperties builds a route's rule from its @doc properties and
// checks each value on its own and the rule's settings against each other
// (the checks middleware.LockRule gets at start-up that need no more than
// the rule); keys are checked against the route by checkKeys. Method and
// Path are left for the caller.
func parseProperties(props map[string]string) (rule, []problem) {
	var r rule
	var problems []problem
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	sort.Strings(names)
	known := make(map[string]property, len(properties))
	for _, p := range properties {
		known[p.name] = p
	}
	for _, name := range names {
		if !isLockProperty(name) {
			continue
		}
		p, ok := known[name]
		if !ok {
			problems = append(problems, problem{name, unknownProperty(name)})
			continue
		}
		if msg := p.set(&r, unquote(props[name])); msg != "" {
			problems = append(problems, problem{name, fmt.Sprintf("%s %q: %s", name, props[name], msg)})
		}
	}
	if _, ok := props[keysProperty]; !ok {
		problems = append(problems, problem{"", fmt.Sprintf("a rule needs %s: its keys, comma-separated "+
			`(lock: "claim:userId,json:orderId"; lock: "" locks the route for every request at once)`, keysProperty)})
	}
	return r, append(problems, crossCheck(r, props)...)
}

// unquote trims a value and strips the quotes around it that goctl's
// older parser (GOCTL_EXPERIMENTAL=off) leaves on.
func unquote(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && (v[0] == '"' || v[0] == '`') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// unknownProperty names the known properties, the one meant first when
// only its case differs.
func unknownProperty(name string) string {
	for _, p := range properties {
		if strings.EqualFold(p.name, name) {
			return fmt.Sprintf("unknown property %s: did you mean %s?", name, p.name)
		}
	}
	list := make([]string, len(properties))
	for i, p := range properties {
		list[i] = p.name
	}
	return fmt.Sprintf("unknown property %s (known: %s)", name, strings.Join(list, ", "))
}

// crossCheck refuses settings that contradict each other within the rule,
// worded as the middleware words them. A rule without lockMode takes
// Lock.Mode from the YAML, which the plugin does not read, so the checks
// that depend on the mode run only on a rule that names it; for the same
// reason a rule in rate mode may leave lockQuota or lockPeriod to the
// Lock section's Quota or Period.
func crossCheck(r rule, props map[string]string) []problem {
	var problems []problem
	if r.Mode != "" {
		if r.Permits != 0 && r.Mode != modeLimit {
			problems = append(problems, problem{"lockPermits", fmt.Sprintf(
				"lockPermits is for limit mode only (this rule is in %s mode): set lockMode: limit, or remove it", r.Mode)})
		}
		if r.Mode != modeRate {
			problems = append(problems, modeOnly(props, r.Mode, modeRate, "lockQuota", "lockPeriod", "lockRateLimitHeaders")...)
		}
		if r.Mode != modeReplay {
			problems = append(problems, modeOnly(props, r.Mode, modeReplay,
				"lockRetain", "lockWait", "lockMaxResponseBytes", "lockFingerprint")...)
		}
		if r.Mode == modeLimit && r.RejectCode != 0 {
			problems = append(problems, problem{"lockRejectCode", "lockRejectCode answers a refused duplicate, " +
				"and limit mode refuses none (a request over the limit gets limit mode's own refusal): remove it"})
		}
		if r.Mode == modeRate {
			problems = append(problems, rateCheck(r)...)
		}
	}
	if r.MaxHold != "" && r.DisableRenew {
		problems = append(problems, problem{"lockMaxHold",
			"lockMaxHold bounds the renewal that lockDisableRenew turns off: remove one of them"})
	}
	if r.MaxHold != "" && r.Expire != "" && r.maxHold != 0 && r.maxHold < r.expire {
		problems = append(problems, problem{"lockMaxHold", fmt.Sprintf(
			"lockMaxHold %s is shorter than lockExpire %s, so the hold would never be renewed: "+
				"raise lockMaxHold (the default is 10 × Expire), or set lockDisableRenew: true", r.MaxHold, r.Expire)})
	}
	return problems
}

// modeOnly refuses, in one problem, those of names that the rule sets
// though they are for mode only and the rule is in another mode.
func modeOnly(props map[string]string, ruleMode, mode string, names ...string) []problem {
	var set []string
	for _, name := range names {
		if _, ok := props[name]; ok {
			set = append(set, name)
		}
	}
	if len(set) == 0 {
		return nil
	}
	verb, pronoun := "is", "it"
	if len(set) > 1 {
		verb, pronoun = "are", "them"
	}
	return []problem{{set[0], fmt.Sprintf("%s %s for %s mode only (this rule is in %s mode): set lockMode: %s, or remove %s",
		strings.Join(set, " and "), verb, mode, ruleMode, mode, pronoun)}}
}

// rateCheck refuses the settings a rule in rate mode cannot use: those
// of a held lock, since a rate rule takes none, and a refusal status,
// since its refusal is always 429.
func rateCheck(r rule) []problem {
	var problems []problem
	if r.Expire != "" {
		problems = append(problems, problem{"lockExpire", "lockExpire is the lifetime of a lock, " +
			"and a rate rule takes none (its window is lockPeriod): remove it"})
	}
	if held := heldLockSettings(r); held != "" {
		problems = append(problems, problem{held, "lockDisableRenew and lockMaxHold bound the renewal of a held lock, " +
			"and a rate rule holds none: remove them"})
	}
	if r.RejectCode != 0 {
		problems = append(problems, problem{"lockRejectCode", "lockRejectCode answers a refused duplicate, " +
			"and a rate rule's refusal is always 429 Too Many Requests, which clients and proxies read as a rate limit: remove it"})
	}
	return problems
}

// heldLockSettings names the first renewal setting the rule sets, or "".
func heldLockSettings(r rule) string {
	switch {
	case r.DisableRenew:
		return "lockDisableRenew"
	case r.MaxHold != "":
		return "lockMaxHold"
	}
	return ""
}

// setList splits a comma-separated list; "" is an empty list.
func setList(list *[]string, v string) string {
	if v == "" {
		return ""
	}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			return "an empty item in the comma-separated list"
		}
		*list = append(*list, item)
	}
	return ""
}

func setMode(r *rule, v string) string {
	switch v {
	case modeInflight, modeWindow, modeReplay, modeLimit, modeRate:
		r.Mode = v
		return ""
	}
	return "want inflight, window, replay, limit or rate"
}

// setDuration keeps the duration as written, once time.ParseDuration
// (which go-zero's conf uses) accepts it and it is at least least; a zero
// written "0" becomes "0s", which YAML does not read as a number.
func setDuration(text *string, parsed *time.Duration, v string, least time.Duration) string {
	d, err := time.ParseDuration(v)
	if err != nil {
		return "not a duration (such as 500ms, 10s or 24h)"
	}
	if d < least {
		if least == 0 {
			return "must not be negative"
		}
		return fmt.Sprintf("must be at least %v", least)
	}
	if d == 0 && least == 0 {
		// In a LockRule, zero is "not set": the Lock section's value holds.
		return "0 is the Lock section's value, not none: remove the property to inherit it, or write a positive duration"
	}
	if d == 0 {
		v = "0s"
	}
	*text = v
	if parsed != nil {
		*parsed = d
	}
	return ""
}

func setCount(n *int, v string) string {
	i, err := strconv.Atoi(v)
	if err != nil || i < 1 {
		return "want a whole number of at least 1"
	}
	*n = i
	return ""
}

// setQuota is setCount, bounded as the middleware bounds a rate rule's
// Quota.
func setQuota(r *rule, v string) string {
	if problem := setCount(&r.Quota, v); problem != "" {
		return problem
	}
	if r.Quota > middleware.MaxQuota {
		return fmt.Sprintf("at most %d: a rate key keeps one entry per admission of its period; "+
			"use a shorter lockPeriod with a smaller lockQuota, or keys that split the traffic more finely", middleware.MaxQuota)
	}
	return ""
}

func setMaxResponseBytes(r *rule, v string) string {
	i, err := strconv.ParseInt(v, 10, 64)
	if err != nil || i < 1 {
		return "want a whole number of bytes, at least 1"
	}
	r.MaxResponseBytes = i
	return ""
}

func setRejectCode(r *rule, v string) string {
	i, err := strconv.Atoi(v)
	if err != nil {
		return "want an HTTP status, a 4xx"
	}
	if i < 400 || i > 499 {
		return "must be a 4xx status, such as 409 (the default) or 425 for dtm, " +
			"since go-zero's breaker counts a 5xx as a failure of the route"
	}
	r.RejectCode = i
	return ""
}

func setBool(b *bool, v string) string {
	switch v {
	case "true":
		*b = true
	case "false":
		*b = false
	default:
		return "want true or false"
	}
	return ""
}
