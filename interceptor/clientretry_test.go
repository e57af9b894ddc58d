package interceptor_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// fastRetries is a ClientConf for Pay whose waits are short.
func fastRetries() interceptor.ClientConf {
	return interceptor.ClientConf{Methods: []string{payMethod}, MaxAttempts: 3, Backoff: time.Millisecond}
}

func unavailable() error { return status.Error(codes.Unavailable, "down") }

// withRetryInfo is a refusal of code carrying a RetryInfo of delay.
func withRetryInfo(code codes.Code, delay time.Duration) error {
	st, err := status.New(code, "already being handled").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)})
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// TestClientRetriesUnavailable: Unavailable twice, then success: the call
// succeeds on its third attempt, all three with the same key.
func TestClientRetriesUnavailable(t *testing.T) {
	srv := newScripted(unavailable(), unavailable())
	client := dialClient(t, serveGRPC(t, srv), fastRetries())
	reply, err := client.Pay(context.Background(), order("R-1"))
	if err != nil || reply.GetStatus() != "paid" {
		t.Fatalf("Pay = %v, %v; want paid", reply, err)
	}
	sameKey(t, srv.attempts(), 3)
}

// TestClientRetriesRetryInfo: a refusal that carries RetryInfo is retried
// after its delay, whatever its code (Aborted, or the FailedPrecondition
// a dtm rule refuses with).
func TestClientRetriesRetryInfo(t *testing.T) {
	for _, code := range []codes.Code{codes.Aborted, codes.FailedPrecondition} {
		t.Run(code.String(), func(t *testing.T) {
			srv := newScripted(withRetryInfo(code, 10*time.Millisecond))
			client := dialClient(t, serveGRPC(t, srv), fastRetries())
			if _, err := client.Pay(context.Background(), order("R-2")); err != nil {
				t.Fatalf("Pay: %v, want the retry's success", err)
			}
			sameKey(t, srv.attempts(), 2)
		})
	}
}

// TestClientNoRetryOtherCodes: any other failure is the call's answer,
// after one attempt: the server's own DeadlineExceeded and an Aborted
// without RetryInfo included.
func TestClientNoRetryOtherCodes(t *testing.T) {
	for _, code := range []codes.Code{codes.InvalidArgument, codes.Internal, codes.Unknown,
		codes.DeadlineExceeded, codes.Aborted, codes.ResourceExhausted, codes.FailedPrecondition} {
		t.Run(code.String(), func(t *testing.T) {
			srv := newScripted(status.Error(code, "no"))
			client := dialClient(t, serveGRPC(t, srv), fastRetries())
			if _, err := client.Pay(context.Background(), order("R-3")); status.Code(err) != code {
				t.Fatalf("Pay: %v, want %v", err, code)
			}
			sameKey(t, srv.attempts(), 1)
		})
	}
}

// TestClientMaxAttempts: a server that stays Unavailable gets MaxAttempts
// attempts, the first included, and the call ends with its last answer.
func TestClientMaxAttempts(t *testing.T) {
	for _, max := range []int{1, 2, 5} {
		srv := newScripted(unavailable(), unavailable(), unavailable(), unavailable(), unavailable(), unavailable())
		c := fastRetries()
		c.MaxAttempts = max
		client := dialClient(t, serveGRPC(t, srv), c)
		if _, err := client.Pay(context.Background(), order("R-4")); status.Code(err) != codes.Unavailable {
			t.Fatalf("MaxAttempts %d: %v, want Unavailable", max, err)
		}
		sameKey(t, srv.attempts(), max)
	}
}

// TestClientAttemptTimeout: AttemptTimeout cuts a hung attempt (its own
// deadline, not the caller's), and the retry, with the same key, succeeds.
func TestClientAttemptTimeout(t *testing.T) {
	srv := newScripted()
	srv.hang = map[int]bool{0: true}
	c := fastRetries()
	c.AttemptTimeout = 100 * time.Millisecond
	client := dialClient(t, serveGRPC(t, srv), c)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.Pay(ctx, order("R-5")); err != nil {
		t.Fatalf("Pay: %v, want the retry after the cut attempt to succeed", err)
	}
	sameKey(t, srv.attempts(), 2)
}

// TestClientCallerDeadline: the caller's deadline bounds the logical call.
// An attempt it cuts is not retried (DeadlineExceeded is the answer), and
// a wait it would cut is not started: the last attempt's answer is
// returned at once, before the deadline.
func TestClientCallerDeadline(t *testing.T) {
	t.Run("an attempt the caller's deadline cuts", func(t *testing.T) {
		srv := newScripted()
		srv.hang = map[int]bool{0: true, 1: true}
		c := fastRetries()
		c.AttemptTimeout = 10 * time.Second
		client := dialClient(t, serveGRPC(t, srv), c)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if _, err := client.Pay(ctx, order("R-6")); status.Code(err) != codes.DeadlineExceeded {
			t.Fatalf("Pay: %v, want DeadlineExceeded", err)
		}
		sameKey(t, srv.attempts(), 1)
	})
	t.Run("a RetryInfo delay past the deadline", func(t *testing.T) {
		// 30s: under the minute a refusal may ask for, past the deadline.
		srv := newScripted(withRetryInfo(codes.Aborted, 30*time.Second))
		client := dialClient(t, serveGRPC(t, srv), fastRetries())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := client.Pay(ctx, order("R-7")); status.Code(err) != codes.Aborted || ctx.Err() != nil {
			t.Fatalf("Pay: %v (context %v), want the refusal, returned before the deadline", err, ctx.Err())
		}
		sameKey(t, srv.attempts(), 1)
	})
	t.Run("a backoff past the deadline", func(t *testing.T) {
		srv := newScripted(unavailable(), unavailable(), unavailable())
		c := fastRetries()
		c.Backoff = time.Hour
		client := dialClient(t, serveGRPC(t, srv), c)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := client.Pay(ctx, order("R-8")); status.Code(err) != codes.Unavailable || ctx.Err() != nil {
			t.Fatalf("Pay: %v (context %v), want Unavailable, returned before the deadline", err, ctx.Err())
		}
		sameKey(t, srv.attempts(), 1)
	})
	t.Run("a cancelled wait", func(t *testing.T) {
		// 30s: a wait the interceptor starts (no deadline), which the
		// cancellation must end at once.
		srv := newScripted(withRetryInfo(codes.Aborted, 30*time.Second))
		answered := make(chan struct{}, 10)
		client := dialClient(t, serveGRPC(t, srv), fastRetries(), func(ctx context.Context, method string, req, reply any,
			cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			err := invoker(ctx, method, req, reply, cc, opts...)
			answered <- struct{}{}
			return err
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := client.Pay(ctx, order("R-9"))
			done <- err
		}()
		<-answered // the first attempt has its answer: the wait follows
		cancel()
		select {
		case err := <-done:
			if status.Code(err) != codes.Aborted {
				t.Fatalf("Pay: %v, want the refusal the wait followed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the cancelled call still waits out its 30s RetryInfo delay")
		}
		sameKey(t, srv.attempts(), 1)
	})
}

// TestClientOtherMethodsUntouched: a method not in Methods gets no key and
// no retry.
func TestClientOtherMethodsUntouched(t *testing.T) {
	srv := newScripted(unavailable())
	client := dialClient(t, serveGRPC(t, srv), fastRetries())
	if _, err := client.Refund(context.Background(), order("R-10")); status.Code(err) != codes.Unavailable {
		t.Fatalf("Refund: %v, want Unavailable, not retried", err)
	}
	if keys := srv.attempts(); len(keys) != 1 || keys[0] != "" {
		t.Fatalf("Refund's attempts carried keys %q, want one attempt without", keys)
	}
}

var _ testpb.PaymentsServer = (*scripted)(nil)
