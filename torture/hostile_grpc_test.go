package torture

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testpb"
)

type okPayments struct {
	testpb.UnimplementedPaymentsServer
}

func (okPayments) Pay(context.Context, *testpb.PayRequest) (*testpb.PayReply, error) {
	return &testpb.PayReply{Status: "paid"}, nil
}

// TestHostileGRPC sends random messages that decode as requests (from
// random bytes), messages with unknown fields and huge repeated fields, and
// calls with missing or repeated metadata, through a real gRPC server with
// the interceptor. Every call ends OK, Aborted or InvalidArgument: never a
// panic, Internal or Unknown.
func TestHostileGRPC(t *testing.T) {
	srv := redistest.Start(t)
	store := zredis.MustNewRedis(zredis.RedisConf{Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
	lock, err := interceptor.UnaryServerInterceptor(interceptor.LockConf{Rules: []interceptor.LockRule{{
		Method: "/zerolock.test.Payments/Pay",
		Keys:   []string{"field:order.items.0.sku", "field:by_line.3", "field:amount", "metadata:x-user"},
	}}}, store)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.UnaryInterceptor(lock))
	testpb.RegisterPaymentsServer(s, okPayments{})
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	client := testpb.NewPaymentsClient(conn)

	calls := 800
	if long() {
		calls = 10000
	}
	r := rand.New(rand.NewPCG(4, 4))
	counts := map[codes.Code]int{}
	for i := 0; i < calls; i++ {
		req := hostileMessage(r, i)
		ctx := context.Background()
		switch i % 5 {
		case 0: // no metadata
		case 1:
			ctx = metadata.AppendToOutgoingContext(ctx, "x-user", "a", "x-user", "b")
		default:
			ctx = metadata.AppendToOutgoingContext(ctx, "x-user", fmt.Sprint("u", r.IntN(3)))
		}
		_, err := client.Pay(ctx, req)
		code := status.Code(err)
		counts[code]++
		switch code {
		case codes.OK, codes.Aborted, codes.InvalidArgument:
		default:
			t.Fatalf("call %d answered %v", i, err)
		}
	}
	record(t, fmt.Sprintf("%d hostile calls, gRPC server + interceptor", calls), fmt.Sprintf("codes %v", counts))
}

// hostileMessage builds the i-th request: decoded from random bytes, with
// unknown fields, or with a huge repeated field.
func hostileMessage(r *rand.Rand, i int) *testpb.PayRequest {
	switch i % 4 {
	case 0:
		for {
			b := make([]byte, r.IntN(256))
			for j := range b {
				b[j] = byte(r.Uint32())
			}
			var req testpb.PayRequest
			if proto.Unmarshal(b, &req) == nil {
				return &req
			}
		}
	case 1:
		req := &testpb.PayRequest{Order: &testpb.Order{Items: []*testpb.Item{{Sku: "s"}}}, Amount: 1,
			ByLine: map[int64]*testpb.Item{3: {Sku: "l"}}}
		unknown := protowire.AppendTag(nil, 999, protowire.BytesType)
		unknown = protowire.AppendBytes(unknown, []byte("surprise"))
		req.ProtoReflect().SetUnknown(unknown)
		return req
	case 2:
		n := 100 + r.IntN(100)
		if i%100 == 2 { // now and then a huge one: 20-40k items, 50k labels
			n = 20000 + r.IntN(20000)
		}
		items := make([]*testpb.Item, n)
		for j := range items {
			items[j] = &testpb.Item{Sku: fmt.Sprint(j)}
		}
		return &testpb.PayRequest{Order: &testpb.Order{Items: items, Labels: make([]string, n)}, Amount: 2,
			ByLine: map[int64]*testpb.Item{3: {Sku: "l"}}}
	}
	return &testpb.PayRequest{Order: &testpb.Order{Items: []*testpb.Item{{Sku: fmt.Sprint(r.IntN(9))}}},
		Amount: float64(r.IntN(3)), ByLine: map[int64]*testpb.Item{3: {Sku: "x"}}}
}
