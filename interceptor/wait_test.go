package interceptor_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
	"github.com/zerolock/zerolock/redislock"
)

// TestWaitReplaysToADuplicateCall: with Wait, a duplicate call sent while
// the first runs waits and gets the first's result instead of Aborted; the
// method runs once. The backend's back-off is a minute, so only the
// wake-up that the stored result announces answers it before zrpc's
// timeout.
func TestWaitReplaysToADuplicateCall(t *testing.T) {
	srv := redistest.Start(t)
	c := interceptor.LockConf{Mode: interceptor.ModeReplay, Expire: 20 * time.Second, Wait: 30 * time.Second,
		Rules: []interceptor.LockRule{{Method: payMethod, Keys: []string{"metadata:authorization", "field:order.id"}}}}
	lock, err := interceptor.UnaryServerInterceptorWithBackend(c,
		redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups(), redislock.WithBackoff(time.Minute, time.Minute)))
	if err != nil {
		t.Fatal(err)
	}
	impl := &gatedPayments{entered: make(chan struct{}, 10), finish: make(chan struct{}), ended: make(chan error, 10)}
	client := serveZrpc(t, impl, lock)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer alice")
	pay := func(out chan<- *testpb.PayReply) {
		reply, err := client.Pay(ctx, order("o-wait"))
		if err != nil {
			t.Error(err)
		}
		out <- reply
	}
	first, second := make(chan *testpb.PayReply, 1), make(chan *testpb.PayReply, 1)
	go pay(first)
	<-impl.entered
	go pay(second)
	admin := srv.Client(t)
	deadline := time.Now().Add(5 * time.Second)
	for !redistest.WaitedOn(context.Background(), admin) {
		if time.Now().After(deadline) {
			t.Fatal("no duplicate is waiting on the key")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(impl.finish)
	if a, b := <-first, <-second; a.GetStatus() != "payment 1" || b.GetStatus() != "payment 1" {
		t.Fatalf("the first %v and the waiting duplicate %v, want payment 1 for both", a, b)
	}
	if n := impl.calls.Load(); n != 1 {
		t.Fatalf("the method ran %d times, want once", n)
	}
}
