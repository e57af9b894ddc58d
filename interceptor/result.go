package interceptor

import (
	"fmt"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/zerolock/zerolock/internal/replay"
)

// recordKind marks the interceptor's records (replay.Record.Kind), so that
// a REST middleware's record under the same key is never replayed here.
const recordKind = 'g'

// maxResultBytes bounds a stored result: the most a gRPC client receives
// by default (grpc.MaxCallRecvMsgSize). A larger result is not kept, and
// a record that decodes to more is refused, so a corrupt compressed value
// cannot expand without limit.
const maxResultBytes = 4 << 20

// The forms of a stored result: the payload's first field.
const (
	formResponse = 1 // then the response's full type name and its bytes
	formStatus   = 2 // then a google.rpc.Status's bytes
)

// storedResult is a completed call's result as it is kept: the response
// message, or the status of the error the method returned, in the proto
// wire format. decodeResult checks only its framing; answer, its meaning.
type storedResult struct {
	form     uint64
	response protoreflect.FullName // formResponse: the message's type
	body     []byte
}

var deterministic = proto.MarshalOptions{Deterministic: true}

// resultOf is the result to keep for a method's answer. kept is false,
// with a nil error, for an answer that is not kept so that a retry runs
// again (see retryable), and for the rule's own rejectCode: that code says
// "not done yet, retry later" (dtm's FailedPrecondition), so keeping it
// would answer every retry with it for Retain and the work would never
// run; an error says why an answer that would be kept
// cannot be (a response that is not a protobuf message or does not
// marshal), and then it is not kept either.
func resultOf(resp any, err error, rejectCode codes.Code) (r storedResult, kept bool, problem error) {
	if err != nil {
		// As the gRPC server itself turns a method's error into a status.
		st, ok := status.FromError(err)
		if !ok {
			st = status.FromContextError(err)
		}
		if st.Code() == codes.OK || retryable(st.Code()) || st.Code() == rejectCode {
			return storedResult{}, false, nil
		}
		body, err := deterministic.Marshal(st.Proto())
		if err != nil {
			return storedResult{}, false, fmt.Errorf("status %v: %w", st.Code(), err)
		}
		return storedResult{form: formStatus, body: body}, true, nil
	}
	m, ok := resp.(proto.Message)
	if !ok {
		return storedResult{}, false, fmt.Errorf("response %T is not a protobuf message", resp)
	}
	body, err := deterministic.Marshal(m)
	if err != nil {
		return storedResult{}, false, fmt.Errorf("response %T: %w", resp, err)
	}
	return storedResult{form: formResponse, response: m.ProtoReflect().Descriptor().FullName(), body: body}, true, nil
}

// retryable reports the codes whose calls are not kept, so that a retry
// runs again: a failure of the server, not an answer to the request.
func retryable(code codes.Code) bool {
	switch code {
	case codes.Internal, codes.Unknown, codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		return true
	}
	return false
}

// encode returns r's payload for a replay.Record.
func (r storedResult) encode() []byte {
	b := replay.AppendUvarint(make([]byte, 0, 8+len(r.response)+len(r.body)), r.form)
	if r.form == formResponse {
		b = replay.AppendBytes(b, []byte(r.response))
	}
	return replay.AppendBytes(b, r.body)
}

// decodeResult reads a payload that encode wrote. Every error wraps
// replay.ErrBadRecord. The result aliases payload.
func decodeResult(payload []byte) (storedResult, error) {
	rd := replay.NewReader(payload)
	r := storedResult{form: rd.Uvarint()}
	switch r.form {
	case formResponse:
		r.response = protoreflect.FullName(rd.Bytes())
		r.body = rd.Bytes()
	case formStatus:
		r.body = rd.Bytes()
	default:
		if err := rd.Err(); err != nil {
			return storedResult{}, err
		}
		return storedResult{}, fmt.Errorf("%w: unknown gRPC result form %d", replay.ErrBadRecord, r.form)
	}
	if err := rd.Err(); err != nil {
		return storedResult{}, err
	}
	if r.form == formResponse && !r.response.IsValid() {
		return storedResult{}, fmt.Errorf("%w: %q is not a message name", replay.ErrBadRecord, r.response)
	}
	return r, nil
}

// answer is what a retry gets: a new response message, or the status of
// the method's error (resp nil). output, when known, is the method's
// response type, which a stored response must have. Errors wrap
// replay.ErrBadRecord: a type this binary does not link, bytes that do
// not unmarshal, a status that is never kept.
func (r storedResult) answer(output protoreflect.FullName) (resp proto.Message, st *status.Status, err error) {
	if r.form == formStatus {
		var sp spb.Status
		if err := proto.Unmarshal(r.body, &sp); err != nil {
			return nil, nil, fmt.Errorf("%w: status: %v", replay.ErrBadRecord, err)
		}
		if code := codes.Code(sp.GetCode()); code == codes.OK || retryable(code) {
			return nil, nil, fmt.Errorf("%w: status %v, which is never kept", replay.ErrBadRecord, code)
		}
		return nil, status.FromProto(&sp), nil
	}
	if output != "" && r.response != output {
		return nil, nil, fmt.Errorf("%w: a %s, where the method answers %s", replay.ErrBadRecord, r.response, output)
	}
	mt, err := protoregistry.GlobalTypes.FindMessageByName(r.response)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: message type %s: %v", replay.ErrBadRecord, r.response, err)
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(r.body, m); err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", replay.ErrBadRecord, r.response, err)
	}
	return m, nil, nil
}
