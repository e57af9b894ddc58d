// Package handler registers the demo's routes.
package handler

import (
	"net/http"

	"github.com/zeromicro/go-zero/rest"

	stock "github.com/zerolock/zerolock/example/api/internal/handler/stock"
	"github.com/zerolock/zerolock/example/api/internal/svc"
)

// RegisterHandlers adds every route of demo.api to server.
func RegisterHandlers(server *rest.Server, serverCtx *svc.ServiceContext) {
	server.AddRoutes(
		[]rest.Route{
			{
				Method:  http.MethodGet,
				Path:    "/stock/:sku",
				Handler: stock.GetStockHandler(serverCtx),
			},
			{
				Method:  http.MethodPost,
				Path:    "/stock/:sku/deduct",
				Handler: stock.DeductStockHandler(serverCtx),
			},
		},
	)
}
