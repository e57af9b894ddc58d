// Package payment holds the HTTP handlers of the payment routes.
package payment

import (
	"net/http"

	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/example/api/internal/logic/payment"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
)

// CreatePaymentHandler handles the CreatePayment route.
func CreatePaymentHandler(svcCtx *svc.ServiceContext) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req types.CreatePaymentReq
		if err := httpx.Parse(r, &req); err != nil {
			httpx.ErrorCtx(r.Context(), w, err)
			return
		}

		l := payment.NewCreatePaymentLogic(r.Context(), svcCtx)
		resp, err := l.CreatePayment(&req)
		if err != nil {
			httpx.ErrorCtx(r.Context(), w, err)
		} else {
			httpx.OkJsonCtx(r.Context(), w, resp)
		}
	}
}
