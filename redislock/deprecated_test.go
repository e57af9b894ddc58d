package redislock_test

import (
	"context"
	"errors"
	"testing"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock"
)

// Code written against the names that moved to package zerolock keeps
// compiling and means the same: the types are aliases, the errors the same
// values, the functions the same behaviour.
func TestDeprecatedNamesAreTheContract(t *testing.T) {
	var (
		_ redislock.Locker        = zerolock.Locker(nil)
		_ redislock.Waiter        = zerolock.Waiter(nil)
		_ redislock.Backend       = zerolock.Backend(nil)
		_ redislock.LockerOptions = zerolock.LockerOptions{}
		_ redislock.WatchSettings = zerolock.WatchSettings{}
		_ redislock.WatchOption   = zerolock.MaxHold(0)
	)
	for _, pair := range [][2]error{
		{redislock.ErrLockLost, zerolock.ErrLockLost},
		{redislock.ErrRenewFailed, zerolock.ErrRenewFailed},
		{redislock.ErrMaxHold, zerolock.ErrMaxHold},
		{redislock.ErrReleased, zerolock.ErrReleased},
	} {
		if !errors.Is(pair[0], pair[1]) || !errors.Is(pair[1], pair[0]) {
			t.Fatalf("%v and %v are not one error", pair[0], pair[1])
		}
	}
	got := redislock.ApplyWatchOptions(redislock.RenewEvery(3), redislock.MaxHold(7))
	if got != (zerolock.WatchSettings{RenewEvery: 3, MaxHold: 7}) {
		t.Fatalf("ApplyWatchOptions = %+v", got)
	}
	ctx := redislock.ContextWithFence(context.Background(), 42)
	if f, ok := zerolock.FenceFromContext(ctx); !ok || f != 42 {
		t.Fatalf("a fence set through redislock reads %d, %v through zerolock", f, ok)
	}
	if f, ok := redislock.FenceFromContext(zerolock.ContextWithFence(context.Background(), 7)); !ok || f != 7 {
		t.Fatalf("a fence set through zerolock reads %d, %v through redislock", f, ok)
	}
	if redislock.DefaultNodeTimeout <= 0 {
		t.Fatal("DefaultNodeTimeout")
	}
}
