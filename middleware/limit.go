package middleware

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// ErrLimitExceeded is the reason of a 429 in limit mode: the request's key
// already runs its rule's Permits requests.
var ErrLimitExceeded = errors.New("middleware: too many concurrent requests")

// limitExceeded is the 429 of a request over its rule's Permits, with
// Retry-After: the time until the next permit frees by expiry at the
// latest (one that frees on release comes sooner).
func limitExceeded(ru *rule, after time.Duration) *Error {
	e := newError(http.StatusTooManyRequests, "limit_exceeded", ErrLimitExceeded,
		fmt.Sprintf("too many requests at once: at most %d may run together, retry later", ru.policy.Permits))
	e.RetryAfter = after
	return e
}

// checkLimit refuses a rule in limit mode that m's backend cannot serve:
// one that makes no semaphores (only a Redis store backend does), one whose
// semaphores cannot renew when Renew is set, and Fence, which would order
// nothing among the Permits holders of a key.
func (m *LockMiddleware) checkLimit(ru *rule) error {
	if ru.policy.Permits == 0 {
		return nil
	}
	if err := m.guard.CheckLimit(); err != nil {
		return fmt.Errorf("%w: rule %s: %v", ErrBadConfig, ru.label, err)
	}
	return nil
}
