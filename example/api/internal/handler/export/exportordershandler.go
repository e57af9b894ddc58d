// Package export holds the HTTP handlers of the export routes.
package export

import (
	"net/http"

	"github.com/zeromicro/go-zero/rest/httpx"

	"github.com/zerolock/zerolock/example/api/internal/logic/export"
	"github.com/zerolock/zerolock/example/api/internal/svc"
)

// ExportOrdersHandler handles the ExportOrders route.
func ExportOrdersHandler(svcCtx *svc.ServiceContext) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		l := export.NewExportOrdersLogic(r.Context(), svcCtx)
		resp, err := l.ExportOrders()
		if err != nil {
			httpx.ErrorCtx(r.Context(), w, err)
		} else {
			httpx.OkJsonCtx(r.Context(), w, resp)
		}
	}
}
