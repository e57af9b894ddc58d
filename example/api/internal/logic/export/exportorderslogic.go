// Package export is the demo's export logic.
package export

import (
	"context"
	"fmt"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
)

// ExportOrdersLogic exports the caller's orders.
type ExportOrdersLogic struct {
	logx.Logger
	ctx    context.Context
	svcCtx *svc.ServiceContext
}

// NewExportOrdersLogic returns the logic for one request.
func NewExportOrdersLogic(ctx context.Context, svcCtx *svc.ServiceContext) *ExportOrdersLogic {
	return &ExportOrdersLogic{Logger: logx.WithContext(ctx), ctx: ctx, svcCtx: svcCtx}
}

// ExportOrders works for ExportHold, standing in for a slow export. It
// knows nothing of limits: the middleware (limit mode, etc/api.yaml) has
// already refused a third concurrent export of the same user. It stops
// when the request ends, which frees the export's permit at once.
func (l *ExportOrdersLogic) ExportOrders() (*types.ExportResp, error) {
	userID := fmt.Sprint(l.ctx.Value("userId"))
	select {
	case <-time.After(l.svcCtx.Config.ExportHold): // stands in for reading and writing the orders
	case <-l.ctx.Done():
		return nil, l.ctx.Err()
	}
	return &types.ExportResp{UserId: userID, Status: "exported"}, nil
}
