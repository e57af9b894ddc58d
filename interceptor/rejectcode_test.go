package interceptor_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/stubbackend"
)

// upperSnake is a code's name as the gRPC spec spells it.
var upperSnake = map[codes.Code]string{
	codes.OK: "OK", codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN", codes.InvalidArgument: "INVALID_ARGUMENT",
	codes.DeadlineExceeded: "DEADLINE_EXCEEDED", codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED", codes.OutOfRange: "OUT_OF_RANGE",
	codes.Unimplemented: "UNIMPLEMENTED", codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE",
	codes.DataLoss: "DATA_LOSS", codes.Unauthenticated: "UNAUTHENTICATED",
}

// TestRejectCodeNames: RejectCode, on the conf or on a rule, takes every
// code by codes.Code.String()'s name and in UPPER_SNAKE, except OK and
// the codes go-zero's zrpc breakers count as failures of the server
// (zrpc/internal/codes.Acceptable), which fail at start-up with
// ErrBadConfig naming the codes it takes; so does a name that is no code.
func TestRejectCodeNames(t *testing.T) {
	refused := map[codes.Code]bool{
		codes.OK: true, codes.DeadlineExceeded: true, codes.Internal: true, codes.Unavailable: true,
		codes.DataLoss: true, codes.Unimplemented: true, codes.ResourceExhausted: true,
	}
	build := func(conf, rule string) error {
		_, err := interceptor.UnaryServerInterceptorWithBackend(interceptor.LockConf{RejectCode: conf, Rules: []interceptor.LockRule{
			{Method: payMethod, Keys: []string{"field:order.id", "metadata:x-user-id"}, RejectCode: rule},
		}}, stubbackend.Recorders())
		return err
	}
	accepted := 0
	for c := codes.OK; c <= codes.Unauthenticated; c++ {
		for _, name := range []string{c.String(), upperSnake[c]} {
			for _, where := range []string{"conf", "rule"} {
				var err error
				if where == "conf" {
					err = build(name, "")
				} else {
					err = build("", name)
				}
				switch {
				case refused[c] && (!errors.Is(err, interceptor.ErrBadConfig) || !strings.Contains(err.Error(), "FailedPrecondition")):
					t.Errorf("RejectCode %s on the %s: %v, want ErrBadConfig naming the codes it takes", name, where, err)
				case !refused[c] && err != nil:
					t.Errorf("RejectCode %s on the %s: %v, want it accepted", name, where, err)
				}
			}
		}
		if !refused[c] {
			accepted++
		}
	}
	if accepted != 10 {
		t.Errorf("%d codes accepted, want 10", accepted)
	}
	for _, name := range []string{"Conflict", "aborted", "10", "FailedPrecondition "} {
		if err := build("", name); !errors.Is(err, interceptor.ErrBadConfig) || !strings.Contains(err.Error(), "no gRPC code") {
			t.Errorf("RejectCode %q: %v, want ErrBadConfig saying it is no gRPC code", name, err)
		}
	}
	if err := build("Internal", ""); err == nil || !strings.Contains(err.Error(), "breaker") {
		t.Errorf("RejectCode Internal: %v, want an error saying why (the breaker)", err)
	}
}

// TestRejectCodeAndMessageOnRefusals: a refused duplicate gets the conf's
// RejectCode (written in UPPER_SNAKE) and Message, or the rule's, with its
// RetryInfo, in inflight, window and replay modes; a call over the limit
// keeps Aborted with its QuotaFailure, and gets the Message.
func TestRejectCodeAndMessageOnRefusals(t *testing.T) {
	srv := redistest.Start(t)
	for _, tc := range []struct {
		mode      string
		rule      interceptor.LockRule
		wantCode  codes.Code
		wantMsg   string
		wantQuota bool
	}{
		{interceptor.ModeInflight, interceptor.LockRule{}, codes.FailedPrecondition, "请勿重复提交", false},
		{interceptor.ModeWindow, interceptor.LockRule{RejectCode: "AlreadyExists", Message: "already paid"}, codes.AlreadyExists, "already paid", false},
		{interceptor.ModeReplay, interceptor.LockRule{}, codes.FailedPrecondition, "请勿重复提交", false},
		{interceptor.ModeLimit, interceptor.LockRule{Permits: 1}, codes.Aborted, "请勿重复提交", true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			r := tc.rule
			r.Method, r.Keys, r.Mode = payMethod, []string{"field:order.id", "metadata:x-user-id"}, tc.mode
			c := interceptor.LockConf{RejectCode: "FAILED_PRECONDITION", Message: "请勿重复提交", SharedKeys: true,
				Rules: []interceptor.LockRule{r}}
			impl := newPayments()
			if tc.mode != interceptor.ModeWindow {
				impl.release = make(chan struct{}) // the first call runs until released
			}
			client := serve(t, c, newStore(srv), impl)
			first := make(chan error, 1)
			go func() { _, err := client.Pay(withUser("alice"), order("R-"+tc.mode)); first <- err }()
			<-impl.inside
			if tc.mode == interceptor.ModeWindow {
				if err := <-first; err != nil {
					t.Fatalf("the first call: %v", err)
				}
			}
			_, err := client.Pay(withUser("alice"), order("R-"+tc.mode))
			st := status.Convert(err)
			if st.Code() != tc.wantCode || st.Message() != tc.wantMsg {
				t.Fatalf("the duplicate: %v, want %s %q", err, tc.wantCode, tc.wantMsg)
			}
			if d := retryDelay(err); d <= 0 || d > 5*time.Second {
				t.Fatalf("the duplicate's RetryInfo is %v, want (0, 5s]", d)
			}
			hasQuota := false
			for _, d := range st.Details() {
				_, ok := d.(*errdetails.QuotaFailure)
				hasQuota = hasQuota || ok
			}
			if hasQuota != tc.wantQuota {
				t.Fatalf("QuotaFailure present: %v, want %v", hasQuota, tc.wantQuota)
			}
			if tc.mode != interceptor.ModeWindow {
				close(impl.release)
				if err := <-first; err != nil {
					t.Fatalf("the first call: %v", err)
				}
			}
		})
	}
}

// A rule in limit mode refuses no duplicate, so a RejectCode on it would
// change nothing: refused at start-up rather than ignored.
func TestRejectCodeRefusedInLimitMode(t *testing.T) {
	_, err := interceptor.UnaryServerInterceptor(interceptor.LockConf{Rules: []interceptor.LockRule{{
		Method: payMethod, Keys: []string{"metadata:x-user-id"}, Mode: interceptor.ModeLimit, Permits: 2,
		RejectCode: "FailedPrecondition",
	}}}, nil)
	if !errors.Is(err, interceptor.ErrBadConfig) || !strings.Contains(err.Error(), "remove RejectCode") {
		t.Fatalf("err = %v, want ErrBadConfig saying to remove RejectCode", err)
	}
}
