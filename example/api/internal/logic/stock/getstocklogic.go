package stock

import (
	"context"
	"net/http"
	"strconv"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
)

// GetStockLogic reads an item's stock.
type GetStockLogic struct {
	logx.Logger
	ctx    context.Context
	svcCtx *svc.ServiceContext
}

// NewGetStockLogic returns the logic for one request.
func NewGetStockLogic(ctx context.Context, svcCtx *svc.ServiceContext) *GetStockLogic {
	return &GetStockLogic{Logger: logx.WithContext(ctx), ctx: ctx, svcCtx: svcCtx}
}

// GetStock answers the stock of an item, or 404 for an unknown item.
func (l *GetStockLogic) GetStock(req *types.StockReq) (*types.StockResp, error) {
	stock, err := readStock(l.ctx, l.svcCtx, req.Sku)
	if err != nil {
		return nil, err
	}
	return &types.StockResp{Sku: req.Sku, Stock: stock}, nil
}

func readStock(ctx context.Context, svcCtx *svc.ServiceContext, sku string) (int64, error) {
	val, err := svcCtx.Redis.GetCtx(ctx, svc.StockKey(sku))
	if err != nil {
		return 0, errorx.Internal(err)
	}
	if val == "" {
		return 0, errorx.New(http.StatusNotFound, "unknown_item", "unknown item %s", sku)
	}
	stock, err := strconv.ParseInt(val, 10, 64)
	if err != nil {
		return 0, errorx.Internal(err)
	}
	return stock, nil
}
