// Command client calls the demo payments service twice at once with the
// same order, as a retrying client or a replaying gateway would, and prints
// both outcomes once both are in: the call that was paid first, then the
// other, which the interceptor answered Aborted with the time to retry
// after, in whole seconds rounded up (as HTTP's Retry-After). It exits 1
// if neither call was paid.
//
// The calls wait for the service to be ready, up to -wait, so the client
// may be started while the service is still starting.
//
//	go run ./example/rpc/client [-addr 127.0.0.1:8080] [-user alice] [-order o-1] [-wait 1m]
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/example/rpc/payments"
	"github.com/zerolock/zerolock/interceptor"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the payments service")
	user := flag.String("user", "alice", "the user id the demo auth trusts")
	order := flag.String("order", fmt.Sprintf("o-%d", time.Now().Unix()), "the order to pay")
	wait := flag.Duration("wait", time.Minute, "how long to wait for the service to be ready and answer")
	flag.Parse()
	logx.Disable()

	// No Timeout: -wait bounds the calls, the wait for the service included,
	// which zrpc's per-call timeout would cut short.
	conn, err := zrpc.NewClient(zrpc.RpcClientConf{Endpoints: []string{*addr}, NonBlock: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer conn.Conn().Close()
	client := payments.NewPaymentsClient(conn.Conn())
	ctx, cancel := context.WithTimeout(context.Background(), *wait)
	defer cancel()
	// One payment, one idempotency key, on both calls and the retry: the
	// service's rule keys payments on it (and the user).
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+*user,
		interceptor.IdempotencyKeyMetadata, "pay-"+*order)

	var (
		wg      sync.WaitGroup
		answers [2]answer
	)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// WaitForReady: a call made before the service listens waits
			// for it, rather than failing Unavailable at once.
			resp, err := client.Pay(ctx, &payments.PayReq{Order: &payments.Order{Id: *order, Amount: 100}},
				grpc.WaitForReady(true))
			answers[i] = answer{resp, err}
		}()
	}
	wg.Wait()
	// Which goroutine's call the server took first is chance; the output
	// is not: successes first, in the order the payments ran.
	slices.SortStableFunc(answers[:], func(a, b answer) int {
		return cmp.Or(cmp.Compare(a.failed(), b.failed()), cmp.Compare(a.resp.GetTimes(), b.resp.GetTimes()))
	})
	for _, a := range answers {
		fmt.Println(a)
	}
	if answers[0].err != nil {
		os.Exit(1) // no call was paid: the service is down or refused both
	}

	// The client lost the paid call's answer (a timeout, a dropped
	// connection) and retries: the service's replay rule answers with the
	// first payment, which does not run again.
	var header metadata.MD
	resp, err := client.Pay(ctx, &payments.PayReq{Order: &payments.Order{Id: *order, Amount: 100}}, grpc.Header(&header))
	retry := answer{resp, err}.String()
	if replayed := header.Get("idempotent-replayed"); len(replayed) > 0 && replayed[0] == "true" {
		retry += ", replayed"
	}
	fmt.Println("retry after a lost answer:", retry)
}

// answer is the outcome of one call.
type answer struct {
	resp *payments.PayResp
	err  error
}

// failed is 1 for an error, 0 for a payment, so payments sort first.
func (a answer) failed() int {
	if a.err != nil {
		return 1
	}
	return 0
}

// String is the line printed for the call: the payment, or the status with
// the retry delay, if any, in whole seconds rounded up.
func (a answer) String() string {
	if a.err == nil {
		return fmt.Sprintf("paid order %s (payment ran %d time(s))", a.resp.GetOrderId(), a.resp.GetTimes())
	}
	st := status.Convert(a.err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.RetryInfo); ok {
			secs := math.Ceil(info.GetRetryDelay().AsDuration().Seconds())
			return fmt.Sprintf("%s: %s (retry after %ds)", st.Code(), st.Message(), int64(secs))
		}
	}
	return fmt.Sprintf("%s: %s", st.Code(), st.Message())
}
