// Package report is the demo's report logic: waiting for a lock, keeping it
// alive with the watchdog, and writing with a fencing token.
package report

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
	"github.com/zerolock/zerolock/redislock"
)

// RebuildReportLogic rebuilds one report.
type RebuildReportLogic struct {
	logx.Logger
	ctx    context.Context
	svcCtx *svc.ServiceContext
}

// NewRebuildReportLogic returns the logic for one request.
func NewRebuildReportLogic(ctx context.Context, svcCtx *svc.ServiceContext) *RebuildReportLogic {
	return &RebuildReportLogic{Logger: logx.WithContext(ctx), ctx: ctx, svcCtx: svcCtx}
}

// RebuildReport queues behind a running rebuild of the same report instead
// of failing (AcquireWaitCtx wakes when the holder releases), keeps its
// short lock alive while it works (Watch), stops if it loses the lock, and
// writes with the lock's fencing token, which the storage checks.
func (l *RebuildReportLogic) RebuildReport(req *types.RebuildReq) (*types.RebuildResp, error) {
	lock := redislock.NewRedisLock(l.svcCtx.Redis, svc.ReportLockKey(req.Id),
		redislock.WithFencing(), redislock.WithExpiry(2*time.Second), redislock.WithName("report"))
	ok, err := lock.AcquireWaitCtx(l.ctx, 10*time.Second)
	if err != nil {
		l.Errorf("wait for report lock %q: %v", req.Id, err)
		return nil, errorx.New(http.StatusServiceUnavailable, "lock_unavailable", "lock store unavailable, try again")
	}
	if !ok {
		return nil, errorx.New(http.StatusConflict, "report_busy", "report %s is still being rebuilt, try again later", req.Id)
	}
	defer func() {
		if _, err := lock.ReleaseCtx(context.WithoutCancel(l.ctx)); err != nil {
			l.Errorf("release report lock %q: %v", req.Id, err)
		}
	}()
	lockCtx := lock.Watch(l.ctx) // ends if the lock is lost: stop working then

	select {
	case <-time.After(l.svcCtx.Config.RebuildTime): // the work
	case <-lockCtx.Done():
		return nil, errorx.New(http.StatusConflict, "lock_lost", "report %s: lock lost while rebuilding (%v)",
			req.Id, context.Cause(lockCtx))
	}

	body := fmt.Sprintf("report %s rebuilt at %s", req.Id, time.Now().Format(time.RFC3339Nano))
	if err := l.svcCtx.Reports.Put(req.Id, body, lock.Fence()); err != nil {
		if errors.Is(err, svc.ErrStaleFence) {
			return nil, errorx.New(http.StatusConflict, "stale_fence", "report %s: %v", req.Id, err)
		}
		return nil, errorx.Internal(err)
	}
	return &types.RebuildResp{Id: req.Id, Fence: lock.Fence()}, nil
}
