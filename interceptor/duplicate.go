package interceptor

import (
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The google.rpc.ErrorInfo that marks the interceptor's refusal of a
// duplicate, for clients to tell what a retry of it would get.
const (
	// ErrorDomain is the ErrorInfo domain of zerolock's refusals.
	ErrorDomain = "zerolock"
	// ReasonDuplicate is the ErrorInfo reason of a refused duplicate: a
	// call whose key another call holds. Its metadata "mode" is the rule's
	// mode. In replay mode a retry gets the first call's result once that
	// call ends; in inflight mode a retry made after the first call ended
	// runs the method again, and in window mode it is refused until the
	// window ends: UnaryClientInterceptor retries only the first.
	ReasonDuplicate = "DUPLICATE"
)

// duplicate is the refusal of a duplicate under ru: the rule's RejectCode
// with msg, a RetryInfo of after, and an ErrorInfo naming the rule's mode.
func duplicate(ru *rule, msg string, after time.Duration) error {
	st := status.New(ru.rejectCode, msg)
	withInfo, err := st.WithDetails(
		&errdetails.RetryInfo{RetryDelay: durationpb.New(after)},
		&errdetails.ErrorInfo{Reason: ReasonDuplicate, Domain: ErrorDomain, Metadata: map[string]string{"mode": ru.Mode()}},
	)
	if err != nil {
		return st.Err()
	}
	return withInfo.Err()
}

// withoutDuplicate returns err, a method's error, without the details that
// make it a duplicate's refusal, and whether it had them: a method that
// passes up the refusal of a service it called (go-zero handlers return
// the errors of their calls as they are) must not have its own callers
// read it as this service's refusal, whose RetryInfo and mode are the
// other service's. Retried on their word, the whole request would run
// again after the delay, and under an inflight rule make new calls with
// new keys. The code and message stay.
func withoutDuplicate(err error) (error, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return err, false
	}
	if _, dup := duplicateMode(st); !dup {
		return err, false
	}
	p := st.Proto()
	kept := p.Details[:0:0]
	for _, d := range p.GetDetails() {
		if d.MessageIs((*errdetails.ErrorInfo)(nil)) || d.MessageIs((*errdetails.RetryInfo)(nil)) {
			continue
		}
		kept = append(kept, d)
	}
	p.Details = kept
	return status.FromProto(p).Err(), true
}

// duplicateMode returns the mode of the rule that refused st as a
// duplicate, if st is the interceptor's refusal of one.
func duplicateMode(st *status.Status) (string, bool) {
	if st.Code() == codes.OK {
		return "", false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain && info.GetReason() == ReasonDuplicate {
			return info.GetMetadata()["mode"], true
		}
	}
	return "", false
}
