// Package server implements the Payments gRPC service.
package server

import (
	"context"

	"github.com/zerolock/zerolock/example/rpc/internal/logic"
	"github.com/zerolock/zerolock/example/rpc/internal/svc"
	"github.com/zerolock/zerolock/example/rpc/payments"
)

// PaymentsServer is the Payments service.
type PaymentsServer struct {
	svcCtx *svc.ServiceContext
	payments.UnimplementedPaymentsServer
}

// NewPaymentsServer returns the service.
func NewPaymentsServer(svcCtx *svc.ServiceContext) *PaymentsServer {
	return &PaymentsServer{svcCtx: svcCtx}
}

// Pay runs a payment.
func (s *PaymentsServer) Pay(ctx context.Context, in *payments.PayReq) (*payments.PayResp, error) {
	l := logic.NewPayLogic(ctx, s.svcCtx)
	return l.Pay(in)
}
