// Package checkout is the demo's checkout logic.
package checkout

import (
	"context"
	"fmt"
	"net/http"

	"github.com/zeromicro/go-zero/core/logx"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
	"github.com/zerolock/zerolock/example/rpc/payments"
	"github.com/zerolock/zerolock/example/rpc/rpcserver"
)

// CheckoutLogic checks an order out.
type CheckoutLogic struct {
	logx.Logger
	ctx    context.Context
	svcCtx *svc.ServiceContext
}

// NewCheckoutLogic returns the logic for one request.
func NewCheckoutLogic(ctx context.Context, svcCtx *svc.ServiceContext) *CheckoutLogic {
	return &CheckoutLogic{Logger: logx.WithContext(ctx), ctx: ctx, svcCtx: svcCtx}
}

// Checkout pays the order through the payments service. It knows nothing
// of retries: the client interceptor on the zrpc client gives the call an
// idempotency key derived from this request's (its Idempotency-Key and
// user) and retries a lost answer with it, and the payments service's
// replay rule answers the retry with the payment it made. The middleware's
// replay rule hands a retried checkout the first one's answer.
func (l *CheckoutLogic) Checkout(req *types.CheckoutReq) (*types.CheckoutResp, error) {
	userID := fmt.Sprint(l.ctx.Value("userId"))
	// The demo payments service trusts the bearer as the user id.
	ctx := metadata.AppendToOutgoingContext(l.ctx, "authorization", "Bearer "+userID)
	if req.LoseAnswer != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, rpcserver.LoseAnswerMetadata, req.LoseAnswer)
	}
	var header metadata.MD
	resp, err := l.svcCtx.Payments.Pay(ctx, &payments.PayReq{Order: &payments.Order{Id: req.OrderId, Amount: req.Amount}},
		grpc.Header(&header))
	if err != nil {
		return nil, paymentError(err)
	}
	replayed := len(header.Get("idempotent-replayed")) > 0 && header.Get("idempotent-replayed")[0] == "true"
	return &types.CheckoutResp{OrderId: resp.GetOrderId(), Amount: req.Amount, Times: resp.GetTimes(),
		PayReplayed: replayed}, nil
}

// paymentError is the answer to a payment that failed: the caller's
// fault is a 4xx, the payments service's a 503 or a 500, which the
// middleware's replay rule does not keep, so a retry runs again (and the
// payments service replays the payment if it was made).
func paymentError(err error) error {
	st := status.Convert(err)
	switch st.Code() {
	case codes.InvalidArgument:
		return errorx.New(http.StatusUnprocessableEntity, "payment_refused", "%s", st.Message())
	case codes.Aborted:
		return errorx.New(http.StatusConflict, "payment_busy", "%s", st.Message())
	case codes.Unavailable, codes.DeadlineExceeded:
		return errorx.New(http.StatusServiceUnavailable, "payments_unavailable", "the payments service did not answer: %s", st.Message())
	default:
		return errorx.Internal(err)
	}
}
