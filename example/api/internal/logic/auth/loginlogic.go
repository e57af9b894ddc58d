// Package auth is the demo's login logic.
package auth

import (
	"context"
	"net/http"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/example/api/internal/errorx"
	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/example/api/internal/types"
)

// LoginLogic issues demo tokens.
type LoginLogic struct {
	logx.Logger
	ctx    context.Context
	svcCtx *svc.ServiceContext
}

// NewLoginLogic returns the logic for one request.
func NewLoginLogic(ctx context.Context, svcCtx *svc.ServiceContext) *LoginLogic {
	return &LoginLogic{Logger: logx.WithContext(ctx), ctx: ctx, svcCtx: svcCtx}
}

// Login signs a JWT whose userId claim go-zero's JWT middleware puts in
// the request context, where the lock rule's claim:userId key reads it.
// It checks no password: it is a demo.
func (l *LoginLogic) Login(req *types.LoginReq) (*types.LoginResp, error) {
	if req.UserId == "" {
		return nil, errorx.New(http.StatusBadRequest, "missing_field", "userId is required")
	}
	auth := l.svcCtx.Config.Auth
	claims := jwt.MapClaims{
		"userId": req.UserId,
		"iat":    time.Now().Unix(),
		"exp":    time.Now().Unix() + auth.AccessExpire,
	}
	token, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString([]byte(auth.AccessSecret))
	if err != nil {
		return nil, errorx.Internal(err)
	}
	return &types.LoginResp{Token: token}, nil
}
