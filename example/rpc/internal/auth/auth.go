// Package auth is the demo's stand-in for a service's own authentication:
// it puts the caller's user id in the context, where the lock rule's
// ctx:userId key reads it.
package auth

import (
	"context"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// UserIDKey is the context key of the caller's user id. It is a plain
// string, as go-zero's JWT middleware uses, so a rule can name it.
const UserIDKey = "userId"

// UnaryServerInterceptor takes the user id from "authorization: Bearer
// <user>" metadata. A demo: it trusts the token as the user id.
func UnaryServerInterceptor(ctx context.Context, req any, _ *grpc.UnaryServerInfo,
	handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	user, ok := strings.CutPrefix(strings.Join(md.Get("authorization"), ""), "Bearer ")
	if !ok || user == "" {
		return nil, status.Error(codes.Unauthenticated, "authorization: Bearer <user> metadata is required")
	}
	//lint:ignore SA1029 a string key is what the lock rule's ctx:userId names
	return handler(context.WithValue(ctx, UserIDKey, user), req)
}
