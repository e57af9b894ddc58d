// Package coupon is the demo's coupon logic.
package coupon

import (
	"context"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
)

// RedeemCouponLogic redeems a coupon.
type RedeemCouponLogic struct {
	logx.Logger
	ctx    context.Context
	svcCtx *svc.ServiceContext
}

// NewRedeemCouponLogic returns the logic for one request.
func NewRedeemCouponLogic(ctx context.Context, svcCtx *svc.ServiceContext) *RedeemCouponLogic {
	return &RedeemCouponLogic{Logger: logx.WithContext(ctx), ctx: ctx, svcCtx: svcCtx}
}

// RedeemCoupon counts a redemption. The window-mode rule on path:code and
// ip refuses the same client redeeming the same code again within the
// window, even after the first redemption has finished.
func (l *RedeemCouponLogic) RedeemCoupon(req *types.RedeemReq) (*types.RedeemResp, error) {
	n, err := l.svcCtx.Redis.IncrCtx(l.ctx, svc.CouponKey(req.Code))
	if err != nil {
		return nil, errorx.Internal(err)
	}
	return &types.RedeemResp{Code: req.Code, Redeemed: n}, nil
}
