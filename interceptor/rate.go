package interceptor

import (
	"fmt"
	"time"

	"github.com/zerolock/zerolock/internal/guard"
)

// RateQuotaMetric names the rate in the QuotaFailure of a call refused in
// rate mode.
const RateQuotaMetric = "zerolock/calls_per_period"

// rateLimited refuses a call over its rule's rate as limit mode refuses
// one over its Permits (see overLimit for why never ResourceExhausted):
// codes.Aborted, or the rule's own RejectCode, the rule's Message if it
// has one, a RetryInfo (the time until a call of the key would be
// admitted) and a QuotaFailure naming the method, the rule's key specs
// (never their values) and Quota.
func rateLimited(ru *rule, retryAfter time.Duration) error {
	calls := "calls"
	if ru.Policy.Quota == 1 {
		calls = "call"
	}
	period := guard.DurationText(ru.Policy.Period)
	return quotaRefusal(ru, ru.rateCode, fmt.Sprintf("zerolock: too many calls: at most %d per %s, retry later",
		ru.Policy.Quota, period), retryAfter, RateQuotaMetric, ru.Policy.Quota,
		fmt.Sprintf("at most %d %s per %s", ru.Policy.Quota, calls, period))
}
