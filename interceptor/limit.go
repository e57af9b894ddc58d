package interceptor

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// QuotaMetric names the limit in the QuotaFailure of a call refused in
// limit mode.
const QuotaMetric = "zerolock/concurrent_calls"

// overLimit refuses a call over its rule's Permits with codes.Aborted
// (whatever the rule's RejectCode, which is a duplicate's), the rule's
// Message if it has one, a RetryInfo (the time until the next permit frees
// by expiry at the latest) and a QuotaFailure naming the method, the
// rule's key specs (never their values) and Permits.
//
// Not ResourceExhausted, which would fit a quota: go-zero counts it, like
// Unavailable, Internal, DeadlineExceeded, DataLoss and Unimplemented, as
// a failure of the server (zrpc/internal/codes.Acceptable), in the zrpc
// client's breaker, the server's breaker and the p2c balancer alike. One
// user's burst over their limit would then open the client's breaker for
// every user of the service, and steer the balancer away from a healthy
// server. Aborted ("retry at a higher level") is what the duplicate
// refusal answers too, and go-zero accepts it; the QuotaFailure tells the
// two refusals apart.
func overLimit(ru *rule, retryAfter time.Duration) error {
	return quotaRefusal(ru, codes.Aborted, fmt.Sprintf("zerolock: too many calls at once: at most %d may run together, retry later",
		ru.Policy.Permits), retryAfter, QuotaMetric, ru.Policy.Permits,
		fmt.Sprintf("at most %d concurrent calls", ru.Policy.Permits))
}

// quotaRefusal is the refusal of a call over a quota of its rule (limit
// mode's Permits, rate mode's Quota): code with the rule's Message, else
// msg, a RetryInfo of retryAfter, and a QuotaFailure naming the method,
// the quota (metric, value) and what it bounds: what, per the rule's key
// specs as written (never their values), or in all.
func quotaRefusal(ru *rule, code codes.Code, msg string, retryAfter time.Duration, metric string, value int, what string) error {
	if len(ru.specs) == 0 {
		what += " in all"
	} else {
		names := make([]string, len(ru.specs))
		for i, s := range ru.specs {
			names[i] = s.Raw
		}
		what += " per " + strings.Join(names, ", ")
	}
	st := status.New(code, ru.messageOr(msg))
	withInfo, err := st.WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)},
		&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject: ru.Label, Description: what, QuotaMetric: metric, QuotaValue: int64(value),
		}}},
	)
	if err != nil {
		return st.Err()
	}
	return withInfo.Err()
}
