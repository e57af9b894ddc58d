package redislock

import (
	"context"
	"time"

	"github.com/zerolock/zerolock"
)

// The lock contract moved to package zerolock, which imports no backend, so
// that etcdlock and zklock no longer import this package to say what they
// are. These names keep code written against earlier releases compiling;
// they are the same types and values, so errors.Is and type assertions
// agree across both spellings. They go in the next release.

// Locker is zerolock.Locker.
//
// Deprecated: use zerolock.Locker.
type Locker = zerolock.Locker

// Waiter is zerolock.Waiter.
//
// Deprecated: use zerolock.Waiter.
type Waiter = zerolock.Waiter

// Backend is zerolock.Backend.
//
// Deprecated: use zerolock.Backend.
type Backend = zerolock.Backend

// LockerOptions is zerolock.LockerOptions.
//
// Deprecated: use zerolock.LockerOptions.
type LockerOptions = zerolock.LockerOptions

// WatchOption is zerolock.WatchOption.
//
// Deprecated: use zerolock.WatchOption.
type WatchOption = zerolock.WatchOption

// WatchSettings is zerolock.WatchSettings.
//
// Deprecated: use zerolock.WatchSettings.
type WatchSettings = zerolock.WatchSettings

// The Watch causes, now zerolock's.
var (
	// Deprecated: use zerolock.ErrLockLost.
	ErrLockLost = zerolock.ErrLockLost
	// Deprecated: use zerolock.ErrRenewFailed.
	ErrRenewFailed = zerolock.ErrRenewFailed
	// Deprecated: use zerolock.ErrMaxHold.
	ErrMaxHold = zerolock.ErrMaxHold
	// Deprecated: use zerolock.ErrReleased.
	ErrReleased = zerolock.ErrReleased
)

// DefaultNodeTimeout is the per-node bound of a RedLock without
// WithNodeTimeout.
//
// Deprecated: WithNodeTimeout's documentation gives the default.
const DefaultNodeTimeout = defaultNodeTimeout

// RenewEvery is zerolock.RenewEvery.
//
// Deprecated: use zerolock.RenewEvery.
func RenewEvery(d time.Duration) zerolock.WatchOption { return zerolock.RenewEvery(d) }

// MaxHold is zerolock.MaxHold.
//
// Deprecated: use zerolock.MaxHold.
func MaxHold(d time.Duration) zerolock.WatchOption { return zerolock.MaxHold(d) }

// ApplyWatchOptions is zerolock.ApplyWatchOptions.
//
// Deprecated: use zerolock.ApplyWatchOptions.
func ApplyWatchOptions(opts ...zerolock.WatchOption) zerolock.WatchSettings {
	return zerolock.ApplyWatchOptions(opts...)
}

// ContextWithFence is zerolock.ContextWithFence.
//
// Deprecated: use zerolock.ContextWithFence.
func ContextWithFence(ctx context.Context, fence int64) context.Context {
	return zerolock.ContextWithFence(ctx, fence)
}

// FenceFromContext is zerolock.FenceFromContext.
//
// Deprecated: use zerolock.FenceFromContext.
func FenceFromContext(ctx context.Context) (int64, bool) {
	return zerolock.FenceFromContext(ctx)
}
