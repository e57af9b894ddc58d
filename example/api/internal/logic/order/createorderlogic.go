// Package order is the demo's order logic.
package order

import (
	"context"
	"fmt"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
)

// CreateOrderLogic processes an order submission.
type CreateOrderLogic struct {
	logx.Logger
	ctx    context.Context
	svcCtx *svc.ServiceContext
}

// NewCreateOrderLogic returns the logic for one request.
func NewCreateOrderLogic(ctx context.Context, svcCtx *svc.ServiceContext) *CreateOrderLogic {
	return &CreateOrderLogic{Logger: logx.WithContext(ctx), ctx: ctx, svcCtx: svcCtx}
}

// CreateOrder counts how often the order was processed. It knows nothing of
// locks: the middleware has already refused a double-click of the same
// order by the same user, so Times stays 1 however fast the user clicks.
func (l *CreateOrderLogic) CreateOrder(req *types.CreateOrderReq) (*types.CreateOrderResp, error) {
	userID := fmt.Sprint(l.ctx.Value("userId"))
	if hold := l.svcCtx.Config.OrderHold; hold > 0 {
		time.Sleep(hold) // stands in for payment and stock calls
	}
	times, err := l.svcCtx.Redis.IncrCtx(l.ctx, svc.OrderKey(userID, req.OrderId))
	if err != nil {
		return nil, errorx.Internal(err)
	}
	return &types.CreateOrderResp{OrderId: req.OrderId, Times: times}, nil
}
