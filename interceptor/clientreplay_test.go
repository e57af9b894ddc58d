package interceptor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// TestClientRetryGetsReplayedResult: the whole point of the two halves.
// The first attempt hangs in the method and AttemptTimeout cuts it; the
// retry, with the same key, finds the first still running and is refused
// with a RetryInfo by the server interceptor in replay mode (keyed on the
// idempotency key and the caller that authenticate puts in the context);
// the method then returns, and a later retry (polling with the back-off,
// since the RetryInfo delay is the first call's remaining hold, not when
// its result comes) gets its result replayed. The method ran once.
func TestClientRetryGetsReplayedResult(t *testing.T) {
	srv := redistest.Start(t)
	impl := newPayments()
	impl.release = make(chan struct{})
	lock := payConf(interceptor.ModeReplay, "metadata:"+interceptor.IdempotencyKeyMetadata, "ctx:userId")
	lock.Expire = 2 * time.Second // the RetryInfo delay is the holder's remaining time
	refused := make(chan struct{}, 10)
	watchRefusals := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		for _, d := range status.Convert(err).Details() {
			if _, ok := d.(*errdetails.RetryInfo); ok {
				refused <- struct{}{}
			}
		}
		return resp, err
	}
	addr := serveGRPC(t, impl, recoverPanics, authenticate, watchRefusals, interceptor.MustUnaryServerInterceptor(lock, newStore(srv)))
	client := dialClient(t, addr, interceptor.ClientConf{Methods: []string{payMethod}, MaxAttempts: 10,
		Backoff: 10 * time.Millisecond, AttemptTimeout: time.Second})

	ctx, cancel := context.WithTimeout(withUser("alice"), 10*time.Second)
	defer cancel()
	type answer struct {
		status string
		header metadata.MD
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		var header metadata.MD
		reply, err := client.Pay(ctx, order("P-1"), grpc.Header(&header))
		done <- answer{reply.GetStatus(), header, err}
	}()
	select {
	case <-refused: // the retry of the cut attempt met the first, running
	case a := <-done:
		t.Fatalf("the call ended before a retry was refused: %q, %v", a.status, a.err)
	}
	close(impl.release)
	a := <-done
	if a.err != nil || a.status != "paid" {
		t.Fatalf("Pay = %q, %v; want the first attempt's paid", a.status, a.err)
	}
	if got := a.header.Get(interceptor.ReplayedHeader); len(got) != 1 || got[0] != "true" {
		t.Errorf("the answer's header %v, want %s: true (a replayed result)", a.header, interceptor.ReplayedHeader)
	}
	if n := impl.entered.Load(); n != 1 {
		t.Fatalf("the method ran %d times, want once", n)
	}
}

// TestClientNoRetryOfInflightDuplicate: against a rule in inflight mode a
// retry is not safe. The first attempt hangs in the method and
// AttemptTimeout cuts it; the retry finds it running and is refused, and
// the method then returns. A retry made now would run the method again,
// so the refusal is the call's answer, and the method ran once. The server
// named the mode in the refusal's ErrorInfo; the answer the caller gets
// has neither it nor the RetryInfo, which speak of the server's hold, and
// would invite the caller's own callers to retry.
func TestClientNoRetryOfInflightDuplicate(t *testing.T) {
	srv := redistest.Start(t)
	impl := newPayments()
	impl.release = make(chan struct{})
	lock := payConf(interceptor.ModeInflight, "metadata:"+interceptor.IdempotencyKeyMetadata, "ctx:userId")
	lock.Expire = 200 * time.Millisecond // a short RetryInfo delay, which a client might wait out and retry
	var (
		once sync.Once
		sent = make(chan *status.Status, 1)
	)
	releaseOnRefusal := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if status.Code(err) == codes.Aborted {
			once.Do(func() {
				sent <- status.Convert(err)
				close(impl.release)
			})
		}
		return resp, err
	}
	addr := serveGRPC(t, impl, recoverPanics, authenticate, releaseOnRefusal, interceptor.MustUnaryServerInterceptor(lock, newStore(srv)))
	client := dialClient(t, addr, interceptor.ClientConf{Methods: []string{payMethod}, MaxAttempts: 5,
		Backoff: time.Millisecond, AttemptTimeout: 300 * time.Millisecond})

	ctx, cancel := context.WithTimeout(withUser("alice"), 10*time.Second)
	defer cancel()
	_, err := client.Pay(ctx, order("P-2"))
	st := status.Convert(err)
	if st.Code() != codes.Aborted {
		t.Fatalf("Pay = %v (the method ran %d times), want the inflight refusal (Aborted)", err, impl.entered.Load())
	}
	if len(st.Details()) != 0 {
		t.Errorf("the call's answer has details %v, want none (the server's RetryInfo and ErrorInfo removed)", st.Details())
	}
	refusal := <-sent
	var mode string
	for _, d := range refusal.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == interceptor.ErrorDomain && info.GetReason() == interceptor.ReasonDuplicate {
			mode = info.GetMetadata()["mode"]
		}
	}
	if mode != interceptor.ModeInflight {
		t.Errorf("the server's refusal has details %v: want an ErrorInfo %s/%s with mode %s", refusal.Details(),
			interceptor.ErrorDomain, interceptor.ReasonDuplicate, interceptor.ModeInflight)
	}
	if n := impl.entered.Load(); n != 1 {
		t.Fatalf("the method ran %d times, want once", n)
	}
}
