package redislock

import (
	"context"
	"errors"
	"testing"
	"time"
)

// lateTimer is a context whose deadline has passed but whose timer has not
// fired yet: Err is still nil, as for a moment in a real context.
type lateTimer struct {
	context.Context
	deadline time.Time
}

func (c lateTimer) Deadline() (time.Time, bool) { return c.deadline, true }

// TestWrapWhenTheSocketTimesOutFirst: a store error that arrives once the
// deadline has passed satisfies errors.Is(err, context.DeadlineExceeded)
// even before ctx.Err() is set; one before the deadline does not.
func TestWrapWhenTheSocketTimesOutFirst(t *testing.T) {
	rl := &RedisLock{keyArray: [1]string{"k"}}
	ioTimeout := errors.New("read tcp: i/o timeout")

	late := lateTimer{context.Background(), time.Now().Add(-time.Millisecond)}
	if err := rl.wrap(late, "acquire", ioTimeout); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ioTimeout) {
		t.Errorf("past deadline: %v, want both the store's error and context.DeadlineExceeded", err)
	}
	early := lateTimer{context.Background(), time.Now().Add(time.Hour)}
	if err := rl.wrap(early, "acquire", ioTimeout); errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("deadline ahead: %v claims the deadline passed", err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rl.wrap(canceled, "release", ioTimeout); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}
