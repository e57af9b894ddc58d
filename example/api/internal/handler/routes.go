// Package handler registers the demo's routes.
package handler

import (
	"net/http"
	"time"

	"github.com/zeromicro/go-zero/rest"

	auth "github.com/zerolock/zerolock/example/api/internal/handler/auth"
	checkout "github.com/zerolock/zerolock/example/api/internal/handler/checkout"
	coupon "github.com/zerolock/zerolock/example/api/internal/handler/coupon"
	export "github.com/zerolock/zerolock/example/api/internal/handler/export"
	order "github.com/zerolock/zerolock/example/api/internal/handler/order"
	payment "github.com/zerolock/zerolock/example/api/internal/handler/payment"
	report "github.com/zerolock/zerolock/example/api/internal/handler/report"
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

	server.AddRoutes(
		rest.WithMiddlewares(
			[]rest.Middleware{serverCtx.Lock},
			[]rest.Route{
				{
					Method:  http.MethodPost,
					Path:    "/login",
					Handler: auth.LoginHandler(serverCtx),
				},
			}...,
		),
	)

	server.AddRoutes(
		rest.WithMiddlewares(
			[]rest.Middleware{serverCtx.Lock},
			[]rest.Route{
				{
					Method:  http.MethodPost,
					Path:    "/orders",
					Handler: order.CreateOrderHandler(serverCtx),
				},
			}...,
		),
		rest.WithJwt(serverCtx.Config.Auth.AccessSecret),
	)

	server.AddRoutes(
		rest.WithMiddlewares(
			[]rest.Middleware{serverCtx.Lock},
			[]rest.Route{
				{
					Method:  http.MethodPost,
					Path:    "/payments",
					Handler: payment.CreatePaymentHandler(serverCtx),
				},
			}...,
		),
		rest.WithJwt(serverCtx.Config.Auth.AccessSecret),
	)

	server.AddRoutes(
		rest.WithMiddlewares(
			[]rest.Middleware{serverCtx.Lock},
			[]rest.Route{
				{
					Method:  http.MethodPost,
					Path:    "/coupons/:code/redeem",
					Handler: coupon.RedeemCouponHandler(serverCtx),
				},
			}...,
		),
	)

	server.AddRoutes(
		rest.WithMiddlewares(
			[]rest.Middleware{serverCtx.Lock},
			[]rest.Route{
				{
					Method:  http.MethodGet,
					Path:    "/exports",
					Handler: export.ExportOrdersHandler(serverCtx),
				},
			}...,
		),
		rest.WithJwt(serverCtx.Config.Auth.AccessSecret),
	)

	server.AddRoutes(
		rest.WithMiddlewares(
			[]rest.Middleware{serverCtx.Lock},
			[]rest.Route{
				{
					Method:  http.MethodPost,
					Path:    "/checkout",
					Handler: checkout.CheckoutHandler(serverCtx),
				},
			}...,
		),
		rest.WithJwt(serverCtx.Config.Auth.AccessSecret),
	)

	server.AddRoutes(
		[]rest.Route{
			{
				Method:  http.MethodPost,
				Path:    "/reports/:id/rebuild",
				Handler: report.RebuildReportHandler(serverCtx),
			},
		},
		rest.WithTimeout(15000*time.Millisecond),
	)
}
