// Package middleware is the package goctl generates for the middlewares a
// .api file names (demo.api's "middleware: Lock"). Its LockMiddleware is
// goctl's pass-through stub, kept so that running goctl again changes
// nothing; the service uses zerolock's middleware instead, imported in
// internal/svc under the alias zlmiddleware because both packages are
// called middleware.
package middleware

import "net/http"

// LockMiddleware is goctl's stub for demo.api's Lock middleware. The
// ServiceContext's Lock field holds zerolock's middleware instead.
type LockMiddleware struct{}

// NewLockMiddleware returns goctl's stub.
func NewLockMiddleware() *LockMiddleware {
	return &LockMiddleware{}
}

// Handle passes every request through.
func (m *LockMiddleware) Handle(next http.HandlerFunc) http.HandlerFunc {
	return next
}
