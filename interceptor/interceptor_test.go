package interceptor_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

const payMethod = "/zerolock.test.Payments/Pay"

func payConf(mode string, keys ...string) interceptor.LockConf {
	return interceptor.LockConf{Mode: mode, Rules: []interceptor.LockRule{{Method: payMethod, Keys: keys}}}
}

func order(id string) *testpb.PayRequest {
	return &testpb.PayRequest{Order: &testpb.Order{Id: id}, UserId: "u-1"}
}

func withUser(user string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(), "x-user-id", user)
}

func TestConcurrentDuplicatesOneReachesHandler(t *testing.T) {
	srv := redistest.Start(t)
	impl := newPayments()
	impl.release = make(chan struct{})
	client := serve(t, payConf(interceptor.ModeInflight, "field:order.id", "metadata:x-user-id"), newStore(srv), impl)

	const n = 20
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := client.Pay(withUser("alice"), order("O-1"))
			errs <- err
		}()
	}
	<-impl.inside
	for i := 0; i < n-1; i++ {
		err := <-errs
		st := status.Convert(err)
		if st.Code() != codes.Aborted {
			t.Fatalf("duplicate answered %v, want Aborted", err)
		}
		var retry *errdetails.RetryInfo
		for _, d := range st.Details() {
			if r, ok := d.(*errdetails.RetryInfo); ok {
				retry = r
			}
		}
		if retry == nil || retry.RetryDelay.AsDuration() <= 0 || retry.RetryDelay.AsDuration() > 5*time.Second {
			t.Fatalf("Aborted without a RetryInfo of (0, 5s]: %v", st.Details())
		}
	}
	// Different values are not blocked while O-1 of alice is held.
	others := make(chan error, 2)
	go func() { _, err := client.Pay(withUser("bob"), order("O-1")); others <- err }()
	go func() { _, err := client.Pay(withUser("alice"), order("O-2")); others <- err }()
	<-impl.inside
	<-impl.inside
	close(impl.release)
	wg.Wait()
	if err := <-errs; err != nil {
		t.Fatalf("the admitted call failed: %v", err)
	}
	for i := 0; i < 2; i++ {
		if err := <-others; err != nil {
			t.Fatalf("another user or order: %v", err)
		}
	}
	if got := impl.entered.Load(); got != 3 {
		t.Fatalf("%d calls reached the method, want 3", got)
	}
}

func TestMissingValues(t *testing.T) {
	srv := redistest.Start(t)
	client := serve(t, payConf(interceptor.ModeInflight, "field:order.items.0.sku", "metadata:x-user-id"), newStore(srv), newPayments())
	withItem := &testpb.PayRequest{Order: &testpb.Order{Items: []*testpb.Item{{Sku: "s"}}}}
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		req     *testpb.PayRequest
		mention string
	}{
		{"no metadata", context.Background(), withItem, "metadata:x-user-id"},
		{"repeated metadata", metadata.AppendToOutgoingContext(context.Background(), "x-user-id", "a", "x-user-id", "b"), withItem, "metadata:x-user-id"},
		{"no order", withUser("u"), &testpb.PayRequest{}, "field:order.items.0.sku"},
		{"no items", withUser("u"), order("O"), "field:order.items.0.sku"},
		{"empty sku", withUser("u"), &testpb.PayRequest{Order: &testpb.Order{Items: []*testpb.Item{{}}}}, "field:order.items.0.sku"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := client.Pay(tc.ctx, tc.req)
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.mention) {
				t.Fatalf("err = %v, want InvalidArgument naming %q", err, tc.mention)
			}
		})
	}
	if _, err := client.Pay(withUser("u"), withItem); err != nil {
		t.Fatalf("complete call: %v", err)
	}
}

func TestRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	store := newStore(srv)
	srv.Kill()
	for _, tc := range []struct {
		failOpen bool
		want     codes.Code
	}{{false, codes.Unavailable}, {true, codes.OK}} {
		c := payConf(interceptor.ModeInflight, "field:order.id")
		c.FailOpen = tc.failOpen
		client := serve(t, c, store, newPayments())
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := client.Pay(ctx, order("O-1"))
		cancel()
		if status.Code(err) != tc.want {
			t.Fatalf("FailOpen=%v with Redis down: %v, want %v", tc.failOpen, err, tc.want)
		}
		// A method without a rule passes straight through.
		if _, err := client.Refund(context.Background(), order("O-1")); status.Code(err) != codes.Unimplemented {
			t.Fatalf("Refund (no rule) with Redis down: %v, want the method's own Unimplemented", err)
		}
	}
}

func TestWindowMode(t *testing.T) {
	srv := redistest.Start(t)
	impl := newPayments()
	c := payConf(interceptor.ModeWindow, "field:order.id")
	c.Expire = 400 * time.Millisecond
	client := serve(t, c, newStore(srv), impl)
	ctx := context.Background()

	start := time.Now()
	if _, err := client.Pay(ctx, order("W-1")); err != nil {
		t.Fatal(err)
	}
	// The first has finished: the refusal says what the window does, not
	// that the first is still being handled.
	if _, err := client.Pay(ctx, order("W-1")); status.Code(err) != codes.Aborted ||
		status.Convert(err).Message() != "zerolock: the same call was already made; repeats are refused for 400ms, retry later" {
		t.Fatalf("repeat inside the window: %v, want Aborted saying repeats are refused for 400ms", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := client.Pay(ctx, order("W-1"))
		if err == nil {
			break
		}
		if status.Code(err) != codes.Aborted || time.Now().After(deadline) {
			t.Fatalf("waiting for the window to end: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if elapsed := time.Since(start); elapsed < c.Expire {
		t.Fatalf("repeat allowed after %v, inside the %v window", elapsed, c.Expire)
	}

	// Failures that a retry should fix release at once; a client error
	// keeps the window.
	for _, tc := range []struct {
		name     string
		err      error
		panics   bool
		released bool
	}{
		{"Unavailable", status.Error(codes.Unavailable, "db down"), false, true},
		{"Internal", status.Error(codes.Internal, "bug"), false, true},
		{"Unknown", errors.New("plain error"), false, true},
		{"DeadlineExceeded", status.Error(codes.DeadlineExceeded, "slow"), false, true},
		{"panic", nil, true, true},
		{"InvalidArgument", status.Error(codes.InvalidArgument, "bad amount"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "W-" + tc.name
			impl.failWith(tc.err)
			impl.panicNext.Store(tc.panics)
			if _, err := client.Pay(ctx, order(id)); err == nil {
				t.Fatal("the failing call succeeded")
			}
			impl.failWith(nil)
			_, err := client.Pay(ctx, order(id))
			if tc.released && err != nil {
				t.Fatalf("retry after %s: %v, want success (released early)", tc.name, err)
			}
			if !tc.released && status.Code(err) != codes.Aborted {
				t.Fatalf("retry after %s: %v, want Aborted (window kept)", tc.name, err)
			}
		})
	}
}

func TestInflightReleasesOnPanic(t *testing.T) {
	srv := redistest.Start(t)
	impl := newPayments()
	client := serve(t, payConf(interceptor.ModeInflight, "field:order.id"), newStore(srv), impl)
	impl.panicNext.Store(true)
	if _, err := client.Pay(context.Background(), order("P-1")); status.Code(err) != codes.Internal {
		t.Fatalf("panicking method: %v, want Internal from the recover interceptor", err)
	}
	if _, err := client.Pay(context.Background(), order("P-1")); err != nil {
		t.Fatalf("after a panic the lock was kept: %v", err)
	}
}

// TestReleasesWithoutWakeups: the interceptor's locks are only tried, so
// its releases do not publish the waiters' wake-up
// (redislock.WithoutWakeups); the lock is released all the same.
func TestReleasesWithoutWakeups(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	client := serve(t, payConf(interceptor.ModeInflight, "field:order.id"), newStore(srv), newPayments())
	before := redistest.Calls(t, admin, "spublish", "publish")
	for i := 0; i < 2; i++ {
		if _, err := client.Pay(context.Background(), order("W-1")); err != nil {
			t.Fatalf("call %d: %v (the first one's lock should be released)", i+1, err)
		}
	}
	if got := redistest.Calls(t, admin, "spublish", "publish") - before; got != 0 {
		t.Errorf("the interceptor's releases published %d times", got)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule interceptor.LockRule
		want string
	}{
		{"unknown source", interceptor.LockRule{Method: payMethod, Keys: []string{"header:x"}}, "header"},
		{"no such field", interceptor.LockRule{Method: payMethod, Keys: []string{"field:order.idd"}}, "idd"},
		{"field of a scalar", interceptor.LockRule{Method: payMethod, Keys: []string{"field:order.id.x"}}, "order.id.x"},
		{"repeated without index", interceptor.LockRule{Method: payMethod, Keys: []string{"field:order.items"}}, "index"},
		{"bad index", interceptor.LockRule{Method: payMethod, Keys: []string{"field:order.items.first.sku"}}, "first"},
		{"map without key", interceptor.LockRule{Method: payMethod, Keys: []string{"field:by_line"}}, "key"},
		{"bad map key", interceptor.LockRule{Method: payMethod, Keys: []string{"field:by_line.x.sku"}}, "x"},
		{"upper-case metadata", interceptor.LockRule{Method: payMethod, Keys: []string{"metadata:X-Id"}}, "lower case"},
		{"bad method", interceptor.LockRule{Method: "zerolock.test.Payments.Pay", Keys: []string{"peer"}}, "/package.Service/Method"},
		{"bad mode", interceptor.LockRule{Method: payMethod, Keys: []string{"peer"}, Mode: "forever"}, "forever"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := interceptor.UnaryServerInterceptor(interceptor.LockConf{Rules: []interceptor.LockRule{tc.rule}}, nil)
			if !errors.Is(err, interceptor.ErrBadConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrBadConfig mentioning %q", err, tc.want)
			}
		})
	}
	_, err := interceptor.UnaryServerInterceptor(interceptor.LockConf{Rules: []interceptor.LockRule{
		{Method: payMethod, Keys: []string{"peer"}}, {Method: payMethod, Keys: []string{"peer"}},
	}}, nil)
	if !errors.Is(err, interceptor.ErrBadConfig) {
		t.Fatalf("two rules for one method: %v, want ErrBadConfig", err)
	}
}
