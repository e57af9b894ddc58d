package interceptor

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

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
	st := status.New(ru.rateCode, ru.messageOr(fmt.Sprintf("zerolock: too many calls: at most %d per %s, retry later",
		ru.Policy.Quota, guard.DurationText(ru.Policy.Period))))
	withInfo, err := st.WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)},
		&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject:     ru.Label,
			Description: rateDescription(ru),
			QuotaMetric: RateQuotaMetric,
			QuotaValue:  int64(ru.Policy.Quota),
		}}},
	)
	if err != nil {
		return st.Err()
	}
	return withInfo.Err()
}

// rateDescription says what the rule limits, naming its key specs as
// written, never their values.
func rateDescription(ru *rule) string {
	calls := "calls"
	if ru.Policy.Quota == 1 {
		calls = "call"
	}
	rate := fmt.Sprintf("at most %d %s per %s", ru.Policy.Quota, calls, guard.DurationText(ru.Policy.Period))
	if len(ru.specs) == 0 {
		return rate + " in all"
	}
	names := make([]string, len(ru.specs))
	for i, s := range ru.specs {
		names[i] = s.Raw
	}
	return rate + " per " + strings.Join(names, ", ")
}
