// Package payment is the demo's payment logic.
package payment

import (
	"context"
	"fmt"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
)

// CreatePaymentLogic makes a payment.
type CreatePaymentLogic struct {
	logx.Logger
	ctx    context.Context
	svcCtx *svc.ServiceContext
}

// NewCreatePaymentLogic returns the logic for one request.
func NewCreatePaymentLogic(ctx context.Context, svcCtx *svc.ServiceContext) *CreatePaymentLogic {
	return &CreatePaymentLogic{Logger: logx.WithContext(ctx), ctx: ctx, svcCtx: svcCtx}
}

// CreatePayment makes a new payment every time it runs, as a payment
// provider's API does. It knows nothing of retries: the middleware's replay
// rule runs it once per Idempotency-Key and user, and hands every retry the
// first payment's answer.
func (l *CreatePaymentLogic) CreatePayment(req *types.CreatePaymentReq) (*types.CreatePaymentResp, error) {
	n, err := l.svcCtx.Redis.IncrCtx(l.ctx, svc.PaymentSeqKey)
	if err != nil {
		return nil, errorx.Internal(err)
	}
	return &types.CreatePaymentResp{PaymentId: fmt.Sprintf("pay-%d", n), Amount: req.Amount}, nil
}
