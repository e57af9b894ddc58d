package interceptor

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/internal/guard"
)

// exchange is one unary call as the shared flow (guard.Serve) drives it:
// it runs the method and answers with gRPC statuses. The call's answer is
// resp and err.
type exchange struct {
	ru      *rule
	ctx     context.Context
	req     any
	handler grpc.UnaryHandler

	resp any
	err  error
	// passedUp: the method returned a duplicate refusal of a service it
	// called (see withoutDuplicate), which is neither kept nor retried.
	passedUp bool
}

// Run runs the method. Its answer is returned by the interceptor, after
// the lock is kept, stored or released, so there is nothing to hold.
func (x *exchange) Run(ctx context.Context, _ guard.Run) {
	x.resp, x.err = x.handler(ctx, x.req)
	x.err, x.passedUp = withoutDuplicate(x.err)
}

// Failed reports a method error after which a retry must not be blocked.
func (x *exchange) Failed(error) bool {
	return failed(x.err)
}

// Answer keeps the method's response, or the status of the error it
// returned, unless the error is a failure of the server (see resultOf).
func (x *exchange) Answer(error) guard.Answer {
	if x.passedUp {
		return guard.Answer{} // not done yet, two hops down: a retry runs again
	}
	r, kept, problem := resultOf(x.resp, x.err, x.ru.rejectCode)
	if !kept {
		return guard.Answer{Problem: problem}
	}
	payload := r.encode()
	if len(payload) > maxResultBytes {
		// The work happened: running it again is what replay mode exists
		// to prevent, so its retries are refused instead.
		return guard.Answer{Keep: true, Unreplayable: fmt.Sprintf("the result is %d bytes, over the %d a kept result may have",
			len(payload), maxResultBytes)}
	}
	return guard.Answer{Keep: true, Payload: payload}
}

// Deliver does nothing: the interceptor returns the answer.
func (x *exchange) Deliver() {}

// Refuse answers with the refusal's status: the rule's RejectCode
// (Aborted by default) with a RetryInfo for what a retry may get past
// (never a code zrpc's breakers count), and for a duplicate an ErrorInfo
// naming the rule's mode (duplicate.go), Aborted with a RetryInfo and a
// QuotaFailure over the limit, Aborted (or the rule's own RejectCode) with
// the same details over the rate, Unavailable when the store failed,
// InvalidArgument for a reused key. The rule's Message is the message of a
// duplicate's refusal and of limit and rate mode's.
func (x *exchange) Refuse(rf guard.Refusal) {
	ru := x.ru
	switch rf.Reason {
	case guard.Unavailable:
		msg := "zerolock: the call cannot be checked for duplicates right now, try again"
		if ru.Policy.Quota > 0 {
			msg = "zerolock: the call cannot be counted against its rate limit right now, try again"
		}
		x.err = status.Error(codes.Unavailable, msg)
	case guard.Duplicate:
		msg := "zerolock: the same call is already being handled, retry later"
		if ru.Policy.Window {
			// The first may have finished long ago: say what the window does.
			msg = fmt.Sprintf("zerolock: the same call was already made; repeats are refused for %s, retry later", guard.DurationText(ru.Policy.Expire))
		}
		x.err = duplicate(ru, ru.messageOr(msg), rf.RetryAfter)
	case guard.OverLimit:
		x.err = overLimit(ru, rf.RetryAfter)
	case guard.RateLimited:
		x.err = rateLimited(ru, rf.RetryAfter)
	case guard.KeyReused:
		x.err = errReused
	case guard.NotKept:
		x.err = refusal(ru.rejectCode, ru.messageOr(msgNotKept), rf.RetryAfter)
	default: // guard.Unreadable
		x.err = refusal(ru.rejectCode, msgUnreadable, rf.RetryAfter)
	}
}

// Replay answers with a stored result, marked by ReplayedHeader, or
// returns why it cannot be read.
func (x *exchange) Replay(payload []byte) error {
	r, err := decodeResult(payload)
	if err != nil {
		return err
	}
	resp, st, err := r.answer(x.ru.output)
	if err != nil {
		return err
	}
	// Fails only outside a gRPC server's call, where there is no header.
	_ = grpc.SetHeader(x.ctx, metadata.Pairs(ReplayedHeader, "true"))
	if st != nil {
		x.err = st.Err()
		return nil
	}
	x.resp = resp
	return nil
}
