package locktest

import (
	"context"
	"fmt"
	"time"
)

// AcquireWaitCtx waits up to wait (no limit when wait <= 0) for the lock.
// A waiter does not poll: it sleeps until the holder releases, or until
// the hold would expire, and tries again.
func (l *memoryLocker) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("locktest: acquire: %w", err)
	}
	waitCtx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	for {
		ok, freed, until, err := l.try()
		if ok || err != nil {
			return ok, err
		}
		timer := time.NewTimer(time.Until(until))
		select {
		case <-freed:
		case <-timer.C:
		case <-waitCtx.Done():
			timer.Stop()
			if err := ctx.Err(); err != nil {
				return false, fmt.Errorf("locktest: acquire: %w", err)
			}
			return false, nil
		}
		timer.Stop()
	}
}
