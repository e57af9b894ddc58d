package interceptor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/zeromicro/go-zero/core/prometheus"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
	"github.com/zerolock/zerolock/redislock"
)

// ledger is a Payments server whose Pay answers with the order, the
// amount and the number of its run, so that a replay is told apart from a
// second run. Each run waits for release, so that duplicates can arrive
// while it runs.
type ledger struct {
	testpb.UnimplementedPaymentsServer
	runs      atomic.Int32
	inside    chan struct{}
	release   chan struct{}
	fail      atomic.Pointer[error]
	panicNext atomic.Bool
	padding   atomic.Int64 // bytes added to the reply
}

func newLedger() *ledger {
	l := &ledger{inside: make(chan struct{}, 1000), release: make(chan struct{})}
	close(l.release)
	return l
}

// failWith makes Pay answer err (nil: succeed).
func (l *ledger) failWith(err error) {
	if err == nil {
		l.fail.Store(nil)
		return
	}
	l.fail.Store(&err)
}

func (l *ledger) Pay(_ context.Context, req *testpb.PayRequest) (*testpb.PayReply, error) {
	run := l.runs.Add(1)
	l.inside <- struct{}{}
	<-l.release
	if l.panicNext.Swap(false) {
		panic("pay failed")
	}
	if err := l.fail.Load(); err != nil {
		return nil, *err
	}
	reply := fmt.Sprintf("paid %s: %v, run %d", req.GetOrder().GetId(), req.GetAmount(), run)
	return &testpb.PayReply{Status: reply + strings.Repeat(" ", int(l.padding.Load()))}, nil
}

func replayConf(keys ...string) interceptor.LockConf {
	return payConf(interceptor.ModeReplay, keys...)
}

func payment(id string, amount float64) *testpb.PayRequest {
	return &testpb.PayRequest{Order: &testpb.Order{Id: id}, UserId: "u-1", Amount: amount}
}

// pay calls Pay as alice and returns the answer with its header metadata.
func pay(client testpb.PaymentsClient, req *testpb.PayRequest) (*testpb.PayReply, metadata.MD, error) {
	var header metadata.MD
	resp, err := client.Pay(withUser("alice"), req, grpc.Header(&header))
	return resp, header, err
}

func isReplayed(header metadata.MD) bool {
	v := header.Get(interceptor.ReplayedHeader)
	return len(v) == 1 && v[0] == "true"
}

// mustReplay calls Pay with req and fails unless it is answered with want,
// marked replayed.
func mustReplay(t *testing.T, client testpb.PaymentsClient, req *testpb.PayRequest, want *testpb.PayReply) {
	t.Helper()
	got, header, err := pay(client, req)
	if err != nil {
		t.Fatalf("retry: %v, want the stored response", err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("retry answered %v, want the stored %v", got, want)
	}
	if !isReplayed(header) {
		t.Fatalf("retry's header %v lacks %s: true", header, interceptor.ReplayedHeader)
	}
}

func TestReplaySequentialRetry(t *testing.T) {
	for _, renew := range []bool{false, true} {
		t.Run(fmt.Sprintf("Renew=%v", renew), func(t *testing.T) {
			srv := redistest.Start(t)
			impl := newLedger()
			c := replayConf("field:order.id", "ctx:userId")
			c.Renew = renew
			client := serve(t, c, newStore(srv), impl, authenticate)

			first, header, err := pay(client, payment("S-1", 10))
			if err != nil {
				t.Fatal(err)
			}
			if isReplayed(header) {
				t.Fatalf("the first call is marked replayed: %v", header)
			}
			for i := 0; i < 3; i++ {
				mustReplay(t, client, payment("S-1", 10), first)
			}
			if got := impl.runs.Load(); got != 1 {
				t.Fatalf("Pay ran %d times, want 1", got)
			}
		})
	}
}

func TestReplayConcurrentFirstCalls(t *testing.T) {
	srv := redistest.Start(t)
	impl := newLedger()
	impl.release = make(chan struct{})
	client := serve(t, replayConf("field:order.id", "ctx:userId"), newStore(srv), impl, authenticate)

	const n = 30
	type answer struct {
		resp *testpb.PayReply
		err  error
	}
	answers := make(chan answer, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, _, err := pay(client, payment("C-1", 5))
			answers <- answer{resp, err}
		}()
	}
	<-impl.inside
	for i := 0; i < n-1; i++ {
		if a := <-answers; status.Code(a.err) != codes.Aborted || retryDelay(a.err) <= 0 {
			t.Fatalf("a concurrent first call answered %v, %v; want Aborted with RetryInfo while the first runs", a.resp, a.err)
		}
	}
	close(impl.release)
	wg.Wait()
	first := <-answers
	if first.err != nil {
		t.Fatalf("the call that ran: %v", first.err)
	}
	for i := 0; i < n; i++ {
		mustReplay(t, client, payment("C-1", 5), first.resp)
	}
	if got := impl.runs.Load(); got != 1 {
		t.Fatalf("Pay ran %d times, want 1", got)
	}
}

func TestReplayMismatchedRequest(t *testing.T) {
	srv := redistest.Start(t)
	impl := newLedger()
	client := serve(t, replayConf("field:order.id", "ctx:userId"), newStore(srv), impl, authenticate)

	first, _, err := pay(client, payment("M-1", 10))
	if err != nil {
		t.Fatal(err)
	}
	_, header, err := pay(client, payment("M-1", 20))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "reused with a different request") {
		t.Fatalf("same key, another amount: %v, want InvalidArgument saying the key was reused", err)
	}
	if isReplayed(header) {
		t.Fatal("a mismatch is marked replayed")
	}
	mustReplay(t, client, payment("M-1", 10), first)
	if got := impl.runs.Load(); got != 1 {
		t.Fatalf("Pay ran %d times, want 1", got)
	}
}

// TestReplayFingerprintSpecs: with Fingerprint, only those values decide
// whether a retry is the same call; a missing one is refused as a missing
// key is.
func TestReplayFingerprintSpecs(t *testing.T) {
	srv := redistest.Start(t)
	impl := newLedger()
	c := replayConf("field:order.id", "ctx:userId")
	c.Rules[0].Fingerprint = []string{"field:amount"}
	client := serve(t, c, newStore(srv), impl, authenticate)

	first, _, err := pay(client, payment("F-1", 10))
	if err != nil {
		t.Fatal(err)
	}
	gift := payment("F-1", 10)
	gift.Gift = true
	mustReplay(t, client, gift, first)
	if _, _, err := pay(client, payment("F-1", 11)); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "reused") {
		t.Fatalf("another amount: %v, want InvalidArgument saying the key was reused", err)
	}
	if _, _, err := pay(client, payment("F-1", 0)); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "field:amount") {
		t.Fatalf("no amount: %v, want InvalidArgument naming field:amount", err)
	}
	if got := impl.runs.Load(); got != 1 {
		t.Fatalf("Pay ran %d times, want 1", got)
	}
}

func TestReplayWhichResultsAreKept(t *testing.T) {
	srv := redistest.Start(t)
	impl := newLedger()
	client := serve(t, replayConf("field:order.id", "ctx:userId"), newStore(srv), impl, authenticate)
	withDetails := func(code codes.Code, msg string) error {
		st, err := status.New(code, msg).WithDetails(&errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "amount", Description: "over the limit"}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	for _, tc := range []struct {
		name   string
		err    error
		panics bool
		kept   bool
	}{
		{"Internal", status.Error(codes.Internal, "bug"), false, false},
		{"Unknown", errors.New("plain error"), false, false},
		{"Unavailable", status.Error(codes.Unavailable, "db down"), false, false},
		{"DeadlineExceeded", status.Error(codes.DeadlineExceeded, "slow"), false, false},
		{"Canceled", status.Error(codes.Canceled, "gave up"), false, false},
		{"context.Canceled", context.Canceled, false, false},
		{"panic", nil, true, false},
		{"InvalidArgument with details", withDetails(codes.InvalidArgument, "bad amount"), false, true},
		{"NotFound", status.Error(codes.NotFound, "no such order"), false, true},
		{"FailedPrecondition", withDetails(codes.FailedPrecondition, "account closed"), false, true},
		{"AlreadyExists", status.Error(codes.AlreadyExists, "paid elsewhere"), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := payment("K-"+tc.name, 10)
			impl.failWith(tc.err)
			impl.panicNext.Store(tc.panics)
			before := impl.runs.Load()
			_, _, firstErr := pay(client, req)
			if firstErr == nil {
				t.Fatal("the failing call succeeded")
			}
			impl.failWith(nil)
			resp, header, err := pay(client, req)
			if !tc.kept {
				if err != nil || isReplayed(header) || impl.runs.Load()-before != 2 {
					t.Fatalf("retry after %s: %v, %v (header %v); want a second run", tc.name, resp, err, header)
				}
				return
			}
			if impl.runs.Load()-before != 1 {
				t.Fatalf("retry after %s ran Pay again", tc.name)
			}
			if !isReplayed(header) {
				t.Fatalf("retry after %s: header %v lacks %s", tc.name, header, interceptor.ReplayedHeader)
			}
			want, got := status.Convert(firstErr), status.Convert(err)
			if !proto.Equal(got.Proto(), want.Proto()) {
				t.Fatalf("retry after %s answered %v, want the stored %v", tc.name, got.Proto(), want.Proto())
			}
			if len(want.Details()) == 0 && strings.Contains(tc.name, "details") {
				t.Fatal("the first answer lost its details")
			}
		})
	}
}

// TestReplayAfterClientLeft: the client gives up while the method runs;
// the method completes, and its result is kept for the retry.
func TestReplayAfterClientLeft(t *testing.T) {
	srv := redistest.Start(t)
	impl := newLedger()
	impl.release = make(chan struct{})
	finished := make(chan struct{}, 10)
	afterLock := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		finished <- struct{}{}
		return resp, err
	}
	client := serve(t, replayConf("field:order.id", "ctx:userId"), newStore(srv), impl, authenticate, afterLock)

	ctx, cancel := context.WithCancel(withUser("alice"))
	left := make(chan error, 1)
	go func() {
		_, err := client.Pay(ctx, payment("L-1", 10))
		left <- err
	}()
	<-impl.inside
	cancel()
	if err := <-left; status.Code(err) != codes.Canceled {
		t.Fatalf("the client that left: %v, want Canceled", err)
	}
	close(impl.release)
	<-finished
	got, header, err := pay(client, payment("L-1", 10))
	if err != nil || !isReplayed(header) || !strings.HasPrefix(got.GetStatus(), "paid L-1: 10, run 1") {
		t.Fatalf("retry: %v, %v (header %v); want the first run's reply, replayed", got, err, header)
	}
	if got := impl.runs.Load(); got != 1 {
		t.Fatalf("Pay ran %d times, want 1", got)
	}
}

// TestReplayAfterRestart: another interceptor, on another store and
// another gRPC server, replays what the first one kept.
func TestReplayAfterRestart(t *testing.T) {
	srv := redistest.Start(t)
	c := replayConf("field:order.id", "ctx:userId")
	before := newLedger()
	first, _, err := pay(serve(t, c, newStore(srv), before, authenticate), payment("A-1", 10))
	if err != nil {
		t.Fatal(err)
	}

	lock, err := interceptor.UnaryServerInterceptorWithBackend(c, redislock.NewBackend(srv.Client(t), redislock.WithoutWakeups()))
	if err != nil {
		t.Fatal(err)
	}
	after := newLedger()
	mustReplay(t, serveWith(t, lock, after, authenticate), payment("A-1", 10), first)
	if got := after.runs.Load(); got != 0 {
		t.Fatalf("the restarted service ran Pay %d times, want 0", got)
	}
}

func TestReplayOnCluster(t *testing.T) {
	cluster := redistest.SharedCluster(t)
	cc := cluster.Client(t)
	c := replayConf("field:order.id", "ctx:userId")
	c.Prefix = fmt.Sprintf("replay-cluster-%d", time.Now().UnixNano()) // the cluster outlives -count runs
	lock, err := interceptor.UnaryServerInterceptorWithBackend(c, redislock.NewBackend(cc, redislock.WithoutWakeups()))
	if err != nil {
		t.Fatal(err)
	}
	impl := newLedger()
	client := serveWith(t, lock, impl, authenticate)
	const orders = 8
	firsts := make([]*testpb.PayReply, orders)
	for i := range firsts {
		if firsts[i], _, err = pay(client, payment(fmt.Sprint("CL-", i), 10)); err != nil {
			t.Fatal(err)
		}
	}
	for i, first := range firsts {
		mustReplay(t, client, payment(fmt.Sprint("CL-", i), 10), first)
	}
	if got := impl.runs.Load(); got != orders {
		t.Fatalf("Pay ran %d times, want %d", got, orders)
	}

	ctx := context.Background()
	var (
		mu   sync.Mutex
		keys []string
	)
	err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		found, err := node.Keys(ctx, c.Prefix+":*").Result()
		mu.Lock()
		keys = append(keys, found...)
		mu.Unlock()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slots := map[int64]bool{}
	for _, k := range keys {
		slot, err := cc.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		slots[slot] = true
	}
	if len(keys) != orders || len(slots) < 2 {
		t.Fatalf("%d keys in %d slots; want %d keys in more than one slot", len(keys), len(slots), orders)
	}
}

func TestReplayTooLargeToKeep(t *testing.T) {
	srv := redistest.Start(t)
	impl := newLedger()
	impl.padding.Store(5 << 20)
	client := serve(t, replayConf("field:order.id", "ctx:userId"), newStore(srv), impl, authenticate)
	if _, _, err := pay(client, payment("B-1", 10)); err == nil {
		t.Fatal("a client received a reply over its 4 MiB limit")
	}
	impl.padding.Store(0)
	_, _, err := pay(client, payment("B-1", 10))
	if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "too large") || retryDelay(err) <= 0 {
		t.Fatalf("retry of a call whose result was too large to keep: %v, want Aborted saying so, with RetryInfo", err)
	}
	if got := impl.runs.Load(); got != 1 {
		t.Fatalf("Pay ran %d times, want 1", got)
	}
}

func TestReplayMetrics(t *testing.T) {
	prometheus.Enable()
	srv := redistest.Start(t)
	client := serve(t, replayConf("field:order.id", "ctx:userId"), newStore(srv), newLedger(), authenticate)
	outcomes := []string{"acquired", "replayed", "mismatch"}
	before := map[string]float64{}
	for _, o := range outcomes {
		before[o] = requests(t, payMethod, o)
	}
	_, _, _ = pay(client, payment("X-1", 10))
	_, _, _ = pay(client, payment("X-1", 10))
	_, _, _ = pay(client, payment("X-1", 11))
	for _, o := range outcomes {
		if got := requests(t, payMethod, o) - before[o]; got != 1 {
			t.Errorf("outcome %s counted %v times, want 1", o, got)
		}
	}
}
