package middleware

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/guard"
)

// The rate headers, as the IETF httpapi working group's draft "RateLimit
// header fields for HTTP" (draft-ietf-httpapi-ratelimit-headers, version
// 11) defines them: RateLimit-Policy is a List of policies, each a String
// naming it with its quota (q) and its window in whole seconds (w);
// RateLimit is a List of the current limits, each the policy's name with
// the quota available now (r) and the seconds until it is restored (t).
// A rule's policy is named after its label ("POST /login").
const (
	rateLimitPolicyHeader = "RateLimit-Policy"
	rateLimitHeader       = "RateLimit"
)

// rateFields are the parts of a rate rule's headers that never change: its
// RateLimit-Policy field, and its policy's name as the RateLimit field
// starts with it.
type rateFields struct {
	policy string // "POST /login";q=5;w=60
	name   string // "POST /login"
}

// newRateFields makes the fields of the rule labelled label. A Period that
// is not a whole number of seconds is announced rounded up (the draft has
// no sub-second windows): a client that keeps to q per w is never refused.
func newRateFields(label string, p guard.Policy) rateFields {
	name := sfString(label)
	return rateFields{
		policy: name + ";q=" + strconv.Itoa(p.Quota) + ";w=" + strconv.FormatInt(ceilSeconds(p.Period), 10),
		name:   name,
	}
}

// setRateHeaders sets the rule's rate headers for the count's answer r.
// t is the time until the key's whole quota is available again, rounded
// up; quota frees earlier as each admission leaves the sliding window, as
// the draft lets a sliding window's server say.
func (ru *rule) setRateHeaders(h http.Header, r zerolock.RateResult) {
	h.Set(rateLimitPolicyHeader, ru.rate.policy)
	h.Set(rateLimitHeader, ru.rate.name+";r="+strconv.Itoa(max(r.Remaining, 0))+
		";t="+strconv.FormatInt(ceilSeconds(r.Reset), 10))
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	return int64((max(d, 0) + time.Second - 1) / time.Second)
}

// sfString writes s as a Structured Field String (RFC 9651, 3.3.3): quoted,
// with backslashes and quotes escaped. A String holds printable ASCII
// only, so any other byte of a route (a UTF-8 path) is percent-encoded.
func sfString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			fmt.Fprintf(&b, "%%%02X", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// rateLimited is the 429 of a request over its rule's rate, with the
// rule's Message if it has one.
func rateLimited(ru *rule) *Error {
	return newError(http.StatusTooManyRequests, "rate_limited", ErrRateLimited,
		ru.messageOr(fmt.Sprintf("too many requests: at most %d per %s, retry later", ru.Policy.Quota, guard.DurationText(ru.Policy.Period))))
}

// checkRate returns what is wrong with a rule's rate settings for REST, or
// "": a rate rule's refusal is always 429, so RejectCode on it would do
// nothing, and the rate headers are rate mode's.
func checkRate(lock *guard.Rule, r LockRule) string {
	switch {
	case lock.Policy.Quota > 0 && r.RejectCode != 0:
		return fmt.Sprintf("RejectCode %d answers a refused duplicate, and a rate rule's refusal is always "+
			"429 Too Many Requests, which clients and proxies read as a rate limit: remove RejectCode from this rule", r.RejectCode)
	case lock.Policy.Quota == 0 && r.RateLimitHeaders:
		return fmt.Sprintf("RateLimitHeaders is for rate mode only (this rule is in %s mode): set Mode: rate, or remove it", lock.Mode())
	}
	return ""
}
