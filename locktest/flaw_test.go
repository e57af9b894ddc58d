package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zerolock/zerolock"
)

// A flaw is a deliberate contract violation, for showing that the suite
// catches it. A flawedBackend adds it to the memory backend.
type flaw string

const (
	noFlaw flaw = ""
	// releasesAnyone: ReleaseCtx deletes the key whoever holds it.
	releasesAnyone flaw = "releases-anyone"
	// busyIsError: AcquireCtx on a held key reports an error.
	busyIsError flaw = "busy-is-error"
	// neverExpires: holds last an hour, whatever their expiry.
	neverExpires flaw = "never-expires"
	// racyAcquire: AcquireCtx checks the key, then takes it, unguarded
	// between the two.
	racyAcquire flaw = "racy-acquire"
	// ignoresContext: AcquireCtx goes ahead with an ended context.
	ignoresContext flaw = "ignores-context"
	// lazyWatch: Watch returns a context but never keeps the hold.
	lazyWatch flaw = "lazy-watch"
	// hopelessWatch: Watch gives up at once, with ErrRenewFailed.
	hopelessWatch flaw = "hopeless-watch"
	// impatientWait: AcquireWaitCtx tries once and never waits.
	impatientWait flaw = "impatient-wait"
	// sameFence: every acquisition gets token 1.
	sameFence flaw = "same-fence"
	// refreshRetakes: RefreshCtx takes a free key, as re-acquiring would.
	refreshRetakes flaw = "refresh-retakes"
)

// errBusy is what a busyIsError backend reports for a held key.
var errBusy = errors.New("locktest: the key is held")

// flawedBackend is the memory backend with one flaw.
type flawedBackend struct {
	mem  *memoryBackend
	flaw flaw
}

func newFlawedBackend(f flaw) *flawedBackend {
	return &flawedBackend{mem: newMemoryBackend(), flaw: f}
}

// NewLocker returns a Locker on key with the backend's flaw.
func (b *flawedBackend) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	if b.flaw == neverExpires {
		o.Expiry = time.Hour
	}
	return &flawedLocker{memoryLocker: b.mem.newLocker(key, o), flaw: b.flaw}
}

// flawedLocker is a memoryLocker with a flaw: the methods below add it,
// the others are the memoryLocker's.
type flawedLocker struct {
	*memoryLocker
	flaw flaw

	lazyMu     sync.Mutex
	lazyCancel context.CancelCauseFunc // a lazyWatch's running watch
}

// AcquireCtx tries once to take the lock, with the busyIsError,
// racyAcquire and ignoresContext flaws.
func (l *flawedLocker) AcquireCtx(ctx context.Context) (bool, error) {
	switch l.flaw {
	case ignoresContext:
		return l.memoryLocker.AcquireCtx(context.WithoutCancel(ctx))
	case busyIsError:
		ok, err := l.memoryLocker.AcquireCtx(ctx)
		if !ok && err == nil {
			err = errBusy
		}
		return ok, err
	case racyAcquire:
		return l.racyAcquire(ctx)
	}
	return l.memoryLocker.AcquireCtx(ctx)
}

// racyAcquire takes the lock if it saw it free a moment before.
func (l *flawedLocker) racyAcquire(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("locktest: acquire: %w", err)
	}
	b := l.b
	b.mu.Lock()
	h := b.live(l.key)
	b.mu.Unlock()
	if h != nil && h.owner != l.memoryLocker {
		return false, nil
	}
	time.Sleep(time.Millisecond) // widens the window the flaw leaves open
	b.mu.Lock()
	defer b.mu.Unlock()
	b.take(l.memoryLocker)
	return true, nil
}

// AcquireWaitCtx waits up to wait for the lock, or with the impatientWait
// flaw, tries once, or with the racyAcquire flaw, polls with racy tries.
func (l *flawedLocker) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	switch l.flaw {
	case impatientWait:
		return l.AcquireCtx(ctx)
	case racyAcquire:
		for deadline := time.Now().Add(wait); ; {
			if ok, err := l.racyAcquire(ctx); ok || err != nil || time.Now().After(deadline) {
				return ok, err
			}
			time.Sleep(time.Millisecond)
		}
	}
	return l.memoryLocker.AcquireWaitCtx(ctx, wait)
}

// ReleaseCtx releases the lock if this Locker holds it, or with the
// releasesAnyone flaw, whoever holds it.
func (l *flawedLocker) ReleaseCtx(ctx context.Context) (bool, error) {
	l.lazyMu.Lock()
	if l.lazyCancel != nil {
		l.lazyCancel(zerolock.ErrReleased)
		l.lazyCancel = nil
	}
	l.lazyMu.Unlock()
	ok, err := l.memoryLocker.ReleaseCtx(ctx)
	if ok || err != nil || l.flaw != releasesAnyone {
		return ok, err
	}
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.live(l.key) == nil {
		return false, nil
	}
	b.drop(l.key)
	return true, nil
}

// Watch keeps the hold alive until ReleaseCtx, or with the lazyWatch flaw
// only says it does, or with the hopelessWatch flaw gives up at once.
func (l *flawedLocker) Watch(ctx context.Context, opts ...zerolock.WatchOption) context.Context {
	switch l.flaw {
	case hopelessWatch:
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(zerolock.ErrRenewFailed)
		return ctx
	case lazyWatch:
		b := l.b
		b.mu.Lock()
		h := b.live(l.key)
		b.mu.Unlock()
		if h == nil || h.owner != l.memoryLocker {
			return l.memoryLocker.Watch(ctx, opts...)
		}
		ctx, cancel := context.WithCancelCause(ctx)
		l.lazyMu.Lock()
		l.lazyCancel = cancel
		l.lazyMu.Unlock()
		return ctx
	}
	return l.memoryLocker.Watch(ctx, opts...)
}

// Fence returns the token of this Locker's latest hold, or with the
// sameFence flaw, 1 once it has held.
func (l *flawedLocker) Fence() int64 {
	f := l.memoryLocker.Fence()
	if l.flaw == sameFence && f > 0 {
		return 1
	}
	return f
}

// RefreshCtx extends this Locker's live hold, or with the refreshRetakes
// flaw, takes the lock when it is free.
func (l *flawedLocker) RefreshCtx(ctx context.Context) (bool, error) {
	ok, err := l.memoryLocker.RefreshCtx(ctx)
	if ok || err != nil || l.flaw != refreshRetakes {
		return ok, err
	}
	return l.memoryLocker.AcquireCtx(ctx)
}
