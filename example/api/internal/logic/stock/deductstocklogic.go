// Package stock is the business logic of the stock endpoints.
package stock

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
	"github.com/zerolock/zerolock/redislock"
)

// DeductStockLogic deducts stock under a per-item lock.
type DeductStockLogic struct {
	logx.Logger
	ctx    context.Context
	svcCtx *svc.ServiceContext
}

// NewDeductStockLogic returns the logic for one request.
func NewDeductStockLogic(ctx context.Context, svcCtx *svc.ServiceContext) *DeductStockLogic {
	return &DeductStockLogic{Logger: logx.WithContext(ctx), ctx: ctx, svcCtx: svcCtx}
}

// DeductStock takes the item's lock with AcquireCtx, reads the stock,
// checks it and writes it back: a read-modify-write that only the lock makes
// safe. A second deduction of the same item while the first runs gets 409.
func (l *DeductStockLogic) DeductStock(req *types.DeductReq) (*types.StockResp, error) {
	// The name labels the lock's metrics and spans: one name for every
	// item, never the key.
	lock := redislock.NewRedisLock(l.svcCtx.Redis, svc.LockKey(req.Sku), redislock.WithName("stock"))
	lock.SetExpire(5)
	ok, err := lock.AcquireCtx(l.ctx)
	if err != nil {
		l.Errorf("acquire stock lock of %q: %v", req.Sku, err)
		return nil, errorx.New(http.StatusServiceUnavailable, "lock_unavailable", "lock store unavailable, try again")
	}
	if !ok {
		return nil, errorx.New(http.StatusConflict, "item_busy", "item %s is busy: another deduction is running", req.Sku)
	}
	defer func() {
		// The request's context may be cancelled by now; the release must
		// still reach Redis.
		if _, err := lock.ReleaseCtx(context.WithoutCancel(l.ctx)); err != nil {
			l.Errorf("release stock lock of %q: %v", req.Sku, err)
		}
	}()

	stock, err := readStock(l.ctx, l.svcCtx, req.Sku)
	if err != nil {
		return nil, err
	}
	if stock < req.Count {
		return nil, errorx.New(http.StatusUnprocessableEntity, "insufficient_stock",
			"insufficient stock of %s: %d left, %d asked", req.Sku, stock, req.Count)
	}
	if hold := l.svcCtx.Config.DeductHold; hold > 0 {
		time.Sleep(hold) // stands in for slow work, so duplicates can be seen
	}
	stock -= req.Count
	if err := l.svcCtx.Redis.SetCtx(l.ctx, svc.StockKey(req.Sku), strconv.FormatInt(stock, 10)); err != nil {
		return nil, errorx.Internal(err)
	}
	return &types.StockResp{Sku: req.Sku, Stock: stock}, nil
}
