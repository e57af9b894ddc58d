package interceptor

import (
	"github.com/zerolock/zerolock/internal/guard"
	"github.com/zerolock/zerolock/internal/testing/stubbackend"
)

// compileOnly is a guard for tests that compile rules and derive keys
// without taking locks.
func compileOnly() *guard.Guard {
	return &guard.Guard{Backend: stubbackend.Recorders(), CallerKeys: callerKeys}
}
