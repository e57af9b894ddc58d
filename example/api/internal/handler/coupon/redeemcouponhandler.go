// Package coupon holds the HTTP handlers of the coupon routes.
package coupon

import (
	"net/http"

	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/example/api/internal/logic/coupon"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
)

// RedeemCouponHandler handles the RedeemCoupon route.
func RedeemCouponHandler(svcCtx *svc.ServiceContext) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req types.RedeemReq
		if err := httpx.Parse(r, &req); err != nil {
			httpx.ErrorCtx(r.Context(), w, err)
			return
		}

		l := coupon.NewRedeemCouponLogic(r.Context(), svcCtx)
		resp, err := l.RedeemCoupon(&req)
		if err != nil {
			httpx.ErrorCtx(r.Context(), w, err)
		} else {
			httpx.OkJsonCtx(r.Context(), w, resp)
		}
	}
}
