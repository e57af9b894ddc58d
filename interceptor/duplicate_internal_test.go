package interceptor

import (
	"context"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/internal/guard"
)

// TestPassedUpDuplicate: a method that returns the duplicate refusal of a
// service it called answers with its code and message but without its
// RetryInfo and ErrorInfo, which are the other service's (its callers
// would retry the whole request on them), and its answer is not kept for
// replay, even when its code is not the rule's RejectCode: it is "not done
// yet" two hops down, and would otherwise be replayed for Retain.
func TestPassedUpDuplicate(t *testing.T) {
	downstream := duplicate(ruleIn(ModeReplay), "the same call is already being handled", 3*time.Second)
	withQuota, err := status.Convert(downstream).WithDetails(&errdetails.QuotaFailure{})
	if err != nil {
		t.Fatal(err)
	}
	x := &exchange{ru: &rule{Rule: &guard.Rule{Policy: guard.Policy{Replay: true}}, rejectCode: codes.FailedPrecondition},
		handler: func(context.Context, any) (any, error) { return nil, withQuota.Err() }}
	x.Run(context.Background(), guard.Held)
	st := status.Convert(x.err)
	if st.Code() != codes.Aborted || st.Message() != "the same call is already being handled" {
		t.Fatalf("answered %v, want the downstream's code and message", x.err)
	}
	if len(st.Details()) != 1 {
		t.Fatalf("details %v, want only the QuotaFailure: no RetryInfo, no ErrorInfo", st.Details())
	}
	if _, ok := st.Details()[0].(*errdetails.QuotaFailure); !ok {
		t.Fatalf("details %v, want the QuotaFailure kept", st.Details())
	}
	if a := x.Answer(nil); a.Keep {
		t.Fatalf("Answer = %+v: a passed-up duplicate kept for replay", a)
	}

	// A method's own error is left alone.
	own := status.Error(codes.Aborted, "business conflict")
	x = &exchange{ru: x.ru, handler: func(context.Context, any) (any, error) { return nil, own }}
	x.Run(context.Background(), guard.Held)
	if x.err != own || !x.Answer(nil).Keep {
		t.Fatalf("a method's own Aborted: %v, kept %v; want it as it is, and kept", x.err, x.Answer(nil).Keep)
	}
}
