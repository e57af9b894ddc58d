package middleware

import (
	"errors"
	"fmt"
	"net/http"
)

// ErrLimitExceeded is the reason of a 429 in limit mode: the request's key
// already runs its rule's Permits requests.
var ErrLimitExceeded = errors.New("middleware: too many concurrent requests")

// limitExceeded is the 429 of a request over its rule's Permits, with the
// rule's Message if it has one; its Retry-After is the time until the next
// permit frees by expiry at the latest (one that frees on release comes
// sooner).
func limitExceeded(ru *rule) *Error {
	return newError(http.StatusTooManyRequests, "limit_exceeded", ErrLimitExceeded,
		ru.messageOr(fmt.Sprintf("too many requests at once: at most %d may run together, retry later", ru.Policy.Permits)))
}
