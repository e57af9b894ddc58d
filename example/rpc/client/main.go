// Command client calls the demo payments service twice at once with the
// same order, as a retrying client or a replaying gateway would, and prints
// both outcomes: one payment runs, the other is answered Aborted with the
// time to retry after.
//
//	go run ./example/rpc/client [-addr 127.0.0.1:8080] [-user alice] [-order o-1]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"github.com/zeromicro/go-zero/zrpc"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/example/rpc/payments"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "the payments service")
	user := flag.String("user", "alice", "the user id the demo auth trusts")
	order := flag.String("order", fmt.Sprintf("o-%d", time.Now().Unix()), "the order to pay")
	flag.Parse()
	logx.Disable()

	conn, err := zrpc.NewClient(zrpc.RpcClientConf{Endpoints: []string{*addr}, NonBlock: true, Timeout: 10000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	client := payments.NewPaymentsClient(conn.Conn())
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+*user)

	var wg sync.WaitGroup
	for i := 1; i <= 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := client.Pay(ctx, &payments.PayReq{Order: &payments.Order{Id: *order, Amount: 100}})
			fmt.Printf("call %d: %s\n", i, outcome(resp, err))
		}()
	}
	wg.Wait()
}

func outcome(resp *payments.PayResp, err error) string {
	if err == nil {
		return fmt.Sprintf("paid order %s (payment ran %d time(s))", resp.GetOrderId(), resp.GetTimes())
	}
	st := status.Convert(err)
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.RetryInfo); ok {
			return fmt.Sprintf("%s: %s (retry after %v)", st.Code(), st.Message(), info.GetRetryDelay().AsDuration().Round(time.Millisecond))
		}
	}
	return fmt.Sprintf("%s: %s", st.Code(), st.Message())
}
