// Package order holds the HTTP handlers of the order routes.
package order

import (
	"net/http"

	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/example/api/internal/logic/order"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
)

// CreateOrderHandler handles the CreateOrder route.
func CreateOrderHandler(svcCtx *svc.ServiceContext) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req types.CreateOrderReq
		if err := httpx.Parse(r, &req); err != nil {
			httpx.ErrorCtx(r.Context(), w, err)
			return
		}

		l := order.NewCreateOrderLogic(r.Context(), svcCtx)
		resp, err := l.CreateOrder(&req)
		if err != nil {
			httpx.ErrorCtx(r.Context(), w, err)
		} else {
			httpx.OkJsonCtx(r.Context(), w, resp)
		}
	}
}
