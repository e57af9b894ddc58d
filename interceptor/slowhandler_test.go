package interceptor_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// gatedPayments holds each Pay until the test closes finish, and answers
// with the call's ordinal.
type gatedPayments struct {
	testpb.UnimplementedPaymentsServer
	calls   atomic.Int32
	entered chan struct{}
	finish  chan struct{}
	ended   chan error // the context's cause when Pay returned, nil when live
}

func (p *gatedPayments) Pay(ctx context.Context, _ *testpb.PayRequest) (*testpb.PayReply, error) {
	id := p.calls.Add(1)
	p.entered <- struct{}{}
	<-p.finish
	p.ended <- context.Cause(ctx)
	return &testpb.PayReply{Status: fmt.Sprintf("payment %d", id)}, nil
}

// TestSlowMethodRunsOnceByDefault is the interceptor's
// TestSlowHandlerRunsOnceByDefault, on a zrpc server: a method three
// expiries long keeps its key in every mode with nothing but Expire set.
func TestSlowMethodRunsOnceByDefault(t *testing.T) {
	for _, tc := range []struct {
		mode      string
		refused   codes.Code
		afterward codes.Code // the retry right after the first returned
		runsAgain bool
	}{
		{interceptor.ModeInflight, codes.Aborted, codes.OK, true},
		{interceptor.ModeWindow, codes.Aborted, codes.Aborted, false},
		{interceptor.ModeReplay, codes.Aborted, codes.OK, false},
		{interceptor.ModeLimit, codes.Aborted, codes.OK, true},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			srv := redistest.Start(t)
			rule := interceptor.LockRule{Method: payMethod, Keys: []string{"ctx:userId", "field:order.id"}}
			if tc.mode == interceptor.ModeLimit {
				rule.Permits = 1
			}
			lock, err := interceptor.UnaryServerInterceptor(interceptor.LockConf{Expire: slowExpire, Mode: tc.mode,
				Rules: []interceptor.LockRule{rule}}, newStore(srv))
			if err != nil {
				t.Fatal(err)
			}
			impl := &gatedPayments{entered: make(chan struct{}, 10), finish: make(chan struct{}), ended: make(chan error, 10)}
			client := serveZrpc(t, impl, authenticate, lock)
			pay := func() (*testpb.PayReply, error) { return client.Pay(withUser("alice"), order("o-1")) }

			first := make(chan *testpb.PayReply, 1)
			go func() {
				reply, err := pay()
				if err != nil {
					t.Error(err)
				}
				first <- reply
			}()
			<-impl.entered
			time.Sleep(3 * slowExpire) // the method outlives its expiry: only renewal keeps the key
			if _, err := pay(); status.Code(err) != tc.refused {
				t.Fatalf("a retry while the first runs, past its expiry: %v, want %v", err, tc.refused)
			}
			close(impl.finish)
			reply := <-first
			if cause := <-impl.ended; cause != nil {
				t.Fatalf("the method's context ended while it held its key: %v", cause)
			}
			if reply.GetStatus() != "payment 1" {
				t.Fatalf("the first payment: %v", reply)
			}
			after, err := pay()
			if status.Code(err) != tc.afterward {
				t.Fatalf("the retry after the first returned: %v, want %v", err, tc.afterward)
			}
			if tc.mode == interceptor.ModeReplay && after.GetStatus() != "payment 1" {
				t.Fatalf("replayed %v, want the first result", after)
			}
			want := int32(1)
			if tc.runsAgain {
				want = 2
			}
			if got := impl.calls.Load(); got != want {
				t.Fatalf("the method ran %d times, want %d", got, want)
			}
		})
	}
}

// slowExpire is the rules' expiry in the slow-method tests: the method
// outlives it several times over.
const slowExpire = 300 * time.Millisecond
