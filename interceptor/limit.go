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
	st := status.New(codes.Aborted, ru.messageOr(fmt.Sprintf("zerolock: too many calls at once: at most %d may run together, retry later",
		ru.Policy.Permits)))
	withInfo, err := st.WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)},
		&errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
			Subject:     ru.Label,
			Description: limitDescription(ru),
			QuotaMetric: QuotaMetric,
			QuotaValue:  int64(ru.Policy.Permits),
		}}},
	)
	if err != nil {
		return st.Err()
	}
	return withInfo.Err()
}

// limitDescription says what the rule limits, naming its key specs as
// written, never their values.
func limitDescription(ru *rule) string {
	if len(ru.specs) == 0 {
		return fmt.Sprintf("at most %d concurrent calls in all", ru.Policy.Permits)
	}
	names := make([]string, len(ru.specs))
	for i, s := range ru.specs {
		names[i] = s.Raw
	}
	return fmt.Sprintf("at most %d concurrent calls per %s", ru.Policy.Permits, strings.Join(names, ", "))
}
