package interceptor_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/readmetest"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

// dtmBranch is the outgoing context of a call dtm makes to a branch: the
// metadata its gRPC client sets (TransInfo2Ctx in dtm's
// client/dtmgrpc/dtmgimp/utils.go), which the dtm server sends with an
// empty dtm-dtm.
func dtmBranch(gid, transType, branchID, op string) context.Context {
	return metadata.AppendToOutgoingContext(context.Background(),
		"dtm-gid", gid,
		"dtm-trans_type", transType,
		"dtm-branch_id", branchID,
		"dtm-op", op,
		"dtm-dtm", "",
	)
}

// readmeDtmConf loads the gRPC rule of the README's "With dtm" (which
// README-cn.md must show too: LoadYAMLSame), its method, which no service
// linked here declares, replaced with method.
func readmeDtmConf(t *testing.T, method string) interceptor.LockConf {
	t.Helper()
	var c struct{ Lock interceptor.LockConf }
	readmetest.LoadYAMLSame(t, "..", "metadata:dtm-gid", &c)
	if len(c.Lock.Rules) != 1 {
		t.Fatalf("the README's rule for dtm over gRPC: %d rules, want one", len(c.Lock.Rules))
	}
	c.Lock.Rules[0].Method = method
	return c.Lock
}

// TestDtmBranchRunsOnce: under the README's rule for dtm, a branch that
// dtm calls again while its first attempt runs gets FailedPrecondition
// (dtm's "ongoing", retried later, where Aborted would roll the global
// transaction back) with a RetryInfo; a call after the attempt ended gets
// its result, replayed; the branch runs once. Its compensation, another
// op of the same branch, is another key and runs.
func TestDtmBranchRunsOnce(t *testing.T) {
	srv := redistest.Start(t)
	impl := newLedger()
	impl.release = make(chan struct{})
	client := serve(t, readmeDtmConf(t, payMethod), newStore(srv), impl)
	req := payment("T-1", 30)
	call := func(op string) (*testpb.PayReply, metadata.MD, error) {
		var header metadata.MD
		resp, err := client.Pay(dtmBranch("gid-dtm-1", "saga", "01", op), req, grpc.Header(&header))
		return resp, header, err
	}

	type answer struct {
		resp *testpb.PayReply
		err  error
	}
	first := make(chan answer, 1)
	go func() {
		resp, _, err := call("action")
		first <- answer{resp, err}
	}()
	<-impl.inside
	_, _, err := call("action")
	if status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("dtm's call while the first attempt runs: %v, want FailedPrecondition", err)
	}
	if d := retryDelay(err); d <= 0 || d > 5*time.Second {
		t.Fatalf("its RetryInfo is %v, want (0, 5s]", d)
	}
	close(impl.release)
	a := <-first
	if a.err != nil {
		t.Fatalf("the first attempt: %v", a.err)
	}
	resp, header, err := call("action")
	if err != nil || !proto.Equal(resp, a.resp) || !isReplayed(header) {
		t.Fatalf("dtm's call after the first attempt: %v %v (header %v), want %v replayed", resp, err, header, a.resp)
	}
	if got := impl.runs.Load(); got != 1 {
		t.Fatalf("the branch ran %d times, want once", got)
	}
	if resp, header, err := call("compensate"); err != nil || isReplayed(header) || proto.Equal(resp, a.resp) {
		t.Fatalf("the branch's compensation: %v %v (header %v), want a run of its own", resp, err, header)
	}
	if got := impl.runs.Load(); got != 2 {
		t.Fatalf("the action and its compensation ran %d times, want 2", got)
	}
}
