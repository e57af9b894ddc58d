// Package logic is the business logic of the demo payments service.
package logic

import (
	"context"
	"fmt"
	"time"

	"github.com/zeromicro/go-zero/core/logx"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/zerolock/zerolock/example/rpc/internal/auth"
	"github.com/zerolock/zerolock/example/rpc/internal/svc"
	"github.com/zerolock/zerolock/example/rpc/payments"
)

// PayLogic runs one payment.
type PayLogic struct {
	logx.Logger
	ctx    context.Context
	svcCtx *svc.ServiceContext
}

// NewPayLogic returns the logic for one call.
func NewPayLogic(ctx context.Context, svcCtx *svc.ServiceContext) *PayLogic {
	return &PayLogic{Logger: logx.WithContext(ctx), ctx: ctx, svcCtx: svcCtx}
}

// Pay counts how often the order was paid. It knows nothing of locks: the
// interceptor has already answered a duplicate of a running call Aborted.
func (l *PayLogic) Pay(in *payments.PayReq) (*payments.PayResp, error) {
	if in.GetOrder().GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "order.id is required")
	}
	user := fmt.Sprint(l.ctx.Value(auth.UserIDKey))
	if hold := l.svcCtx.Config.PayHold; hold > 0 {
		time.Sleep(hold) // stands in for the payment provider's call
	}
	times, err := l.svcCtx.Redis.IncrCtx(l.ctx, svc.PaymentKey(user, in.GetOrder().GetId()))
	if err != nil {
		return nil, err
	}
	return &payments.PayResp{OrderId: in.GetOrder().GetId(), Times: times}, nil
}
