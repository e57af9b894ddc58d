package interceptor

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zerolock/zerolock/internal/replay"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

func TestResultRoundTrip(t *testing.T) {
	detailed, err := status.New(codes.InvalidArgument, "bad amount").WithDetails(&errdetails.ErrorInfo{Reason: "LIMIT"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		resp any
		err  error
	}{
		{"response", &testpb.PayReply{Status: "paid"}, nil},
		{"empty response", &testpb.PayReply{}, nil},
		{"status", nil, status.Error(codes.NotFound, "no such order")},
		{"status with details", nil, detailed.Err()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, kept, problem := resultOf(tc.resp, tc.err, codes.Aborted)
			if !kept || problem != nil {
				t.Fatalf("not kept: %v", problem)
			}
			back, err := decodeResult(r.encode())
			if err != nil {
				t.Fatal(err)
			}
			resp, st, err := back.answer(testpb.File_testpb_proto.Messages().ByName("PayReply").FullName())
			if err != nil {
				t.Fatal(err)
			}
			if tc.err != nil {
				if resp != nil || !proto.Equal(st.Proto(), status.Convert(tc.err).Proto()) {
					t.Fatalf("answered %v, %v; want %v", resp, st, tc.err)
				}
				return
			}
			if st != nil || !proto.Equal(resp, tc.resp.(proto.Message)) {
				t.Fatalf("answered %v, %v; want %v", resp, st, tc.resp)
			}
		})
	}
}

func TestResultNotKept(t *testing.T) {
	for _, err := range []error{
		status.Error(codes.Internal, "x"), status.Error(codes.Unknown, "x"), status.Error(codes.Unavailable, "x"),
		status.Error(codes.DeadlineExceeded, "x"), status.Error(codes.Canceled, "x"), errors.New("plain"),
	} {
		if _, kept, problem := resultOf(nil, err, codes.Aborted); kept || problem != nil {
			t.Errorf("%v: kept %v, problem %v; want neither", err, kept, problem)
		}
	}
	// The rule's RejectCode says "not done yet" (dtm's FailedPrecondition):
	// keeping it would answer every retry with it.
	for _, code := range []codes.Code{codes.Aborted, codes.FailedPrecondition} {
		if _, kept, _ := resultOf(nil, status.Error(code, "x"), code); kept {
			t.Errorf("%v under RejectCode %v: kept", code, code)
		}
	}
	if _, kept, _ := resultOf(nil, status.Error(codes.FailedPrecondition, "x"), codes.Aborted); !kept {
		t.Error("FailedPrecondition under RejectCode Aborted: not kept")
	}
	if _, kept, problem := resultOf("not a message", nil, codes.Aborted); kept || problem == nil {
		t.Errorf("a response that is not a message: kept %v, problem %v", kept, problem)
	}
	if _, kept, problem := resultOf(nil, status.Error(codes.InvalidArgument, "\xff"), codes.Aborted); kept || problem == nil {
		t.Errorf("a status that does not marshal: kept %v, problem %v", kept, problem)
	}
}

// FuzzGRPCRecord: any value in a call's key is either answered (a record
// of this interceptor) or refused with an error wrapping
// replay.ErrBadRecord, never a panic; a payload that decodes re-encodes to
// one that decodes alike.
func FuzzGRPCRecord(f *testing.F) {
	reply, _, _ := resultOf(&testpb.PayReply{Status: "paid"}, nil, codes.Aborted)
	st, _, _ := resultOf(nil, status.Error(codes.NotFound, "no such order"), codes.Aborted)
	for _, r := range []storedResult{reply, st} {
		f.Add(replay.Encode(replay.Record{Kind: recordKind, Payload: r.encode()}))
		f.Add(r.encode())
	}
	f.Add([]byte{formResponse, 3, 'a', '.', 'b', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if rec, err := replay.Decode(b, maxResultBytes); err == nil && rec.Kind == recordKind {
			b = rec.Payload
		}
		r, err := decodeResult(b)
		if err != nil {
			if !errors.Is(err, replay.ErrBadRecord) {
				t.Fatalf("decodeResult error %v does not wrap ErrBadRecord", err)
			}
			return
		}
		again, err := decodeResult(r.encode())
		if err != nil || again.form != r.form || again.response != r.response || !bytes.Equal(again.body, r.body) {
			t.Fatalf("re-encoding changed the result: %+v, %v; was %+v", again, err, r)
		}
		resp, st, err := r.answer("")
		switch {
		case err != nil:
			if !errors.Is(err, replay.ErrBadRecord) {
				t.Fatalf("answer error %v does not wrap ErrBadRecord", err)
			}
		case (resp == nil) == (st == nil):
			t.Fatalf("answer gave %v and %v: want exactly one", resp, st)
		case st != nil && (st.Code() == codes.OK || retryable(st.Code())):
			t.Fatalf("answer replays status %v, which is never kept", st.Code())
		}
	})
}
