// Package stubbackend is a lock backend for tests that compile rules and
// derive keys without taking locks.
package stubbackend

import (
	"context"
	"time"

	"github.com/zerolock/zerolock"
)

// Recorders returns a backend whose locks are zerolock.Recorders (and
// Watchers, whose watches never end by themselves) that are always free,
// so that replay rules compile against it with renewal on. Its locks hold
// nothing: never use it where exclusion matters.
func Recorders() zerolock.Backend { return recorder{} }

type recorder struct{}

func (recorder) NewLocker(string, zerolock.LockerOptions) zerolock.Locker { return recorder{} }

func (recorder) AcquireCtx(context.Context) (bool, error) { return true, nil }

func (recorder) ReleaseCtx(context.Context) (bool, error) { return true, nil }

func (recorder) AcquireOrReadCtx(context.Context) (bool, []byte, error) { return true, nil, nil }

func (recorder) RecordCtx(context.Context, []byte, time.Duration) (bool, error) { return true, nil }

func (recorder) Watch(ctx context.Context, _ ...zerolock.WatchOption) context.Context { return ctx }
