package locktest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerolock/zerolock"
)

// A flaw is a deliberate contract violation of the in-memory backend, for
// showing that the suite catches it.
type flaw string

const (
	noFlaw flaw = ""
	// releasesAnyone: ReleaseCtx deletes the key whoever holds it.
	releasesAnyone flaw = "releases-anyone"
	// busyIsError: AcquireCtx on a held key reports an error.
	busyIsError flaw = "busy-is-error"
	// neverExpires: holds last until released.
	neverExpires flaw = "never-expires"
	// racyAcquire: AcquireCtx checks the key, then takes it, unguarded
	// between the two.
	racyAcquire flaw = "racy-acquire"
	// ignoresContext: AcquireCtx goes ahead with an ended context.
	ignoresContext flaw = "ignores-context"
	// lazyWatch: Watch returns a context but never renews the hold.
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
var errBusy = errors.New("memlock: the key is held")

// memBackend keeps locks in memory, on the monotonic clock. With noFlaw it
// implements the whole contract: Locker, Waiter, TTLer, Watcher, Fencer,
// Refresher.
type memBackend struct {
	flaw flaw

	mu    sync.Mutex
	holds map[string]*memHold      // the hold of each key, maybe expired
	fence map[string]int64         // the latest token of each key
	freed map[string]chan struct{} // closed, and replaced, on each release
}

// memHold is one hold of a key.
type memHold struct {
	owner *memLocker
	until time.Time
}

func newMemBackend(f flaw) *memBackend {
	return &memBackend{
		flaw:  f,
		holds: make(map[string]*memHold),
		fence: make(map[string]int64),
		freed: make(map[string]chan struct{}),
	}
}

// NewLocker returns a Locker on key.
func (b *memBackend) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	return &memLocker{b: b, key: key, expiry: o.Expiry}
}

// live returns key's hold while it lasts, nil once it has expired; b.mu is
// held.
func (b *memBackend) live(key string) *memHold {
	h := b.holds[key]
	if h != nil && b.flaw != neverExpires && !time.Now().Before(h.until) {
		delete(b.holds, key)
		return nil
	}
	return h
}

// freedChan returns the channel the next release of key closes; b.mu is
// held.
func (b *memBackend) freedChan(key string) chan struct{} {
	ch := b.freed[key]
	if ch == nil {
		ch = make(chan struct{})
		b.freed[key] = ch
	}
	return ch
}

// memLocker is one Locker of a memBackend.
type memLocker struct {
	b      *memBackend
	key    string
	expiry time.Duration
	fence  atomic.Int64

	mu  sync.Mutex
	dog *memWatch
}

// memWatch renews one watched hold.
type memWatch struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
}

// AcquireCtx tries once to take the lock.
func (l *memLocker) AcquireCtx(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil && l.b.flaw != ignoresContext {
		return false, fmt.Errorf("memlock: acquire: %w", err)
	}
	ok, _, _, err := l.try()
	return ok, err
}

// try tries once to take the lock; when another holds it, it also returns
// the channel the next release closes and when the hold expires.
func (l *memLocker) try() (ok bool, freed <-chan struct{}, until time.Time, err error) {
	b := l.b
	if b.flaw == racyAcquire {
		b.mu.Lock()
		h := b.live(l.key)
		b.mu.Unlock()
		if h != nil && h.owner != l {
			return false, nil, time.Time{}, nil
		}
		time.Sleep(time.Millisecond) // widens the window the flaw leaves open
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.live(l.key)
	switch {
	case h != nil && h.owner != l && b.flaw != racyAcquire:
		if b.flaw == busyIsError {
			return false, nil, time.Time{}, errBusy
		}
		return false, b.freedChan(l.key), h.until, nil
	case h != nil && h.owner == l:
		h.until = time.Now().Add(l.expiry)
		return true, nil, time.Time{}, nil
	}
	b.fence[l.key]++
	if b.flaw == sameFence {
		b.fence[l.key] = 1
	}
	b.holds[l.key] = &memHold{owner: l, until: time.Now().Add(l.expiry)}
	l.fence.Store(b.fence[l.key])
	return true, nil, time.Time{}, nil
}

// AcquireWaitCtx waits up to wait for the lock.
func (l *memLocker) AcquireWaitCtx(ctx context.Context, wait time.Duration) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("memlock: acquire: %w", err)
	}
	waitCtx := ctx
	if wait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, wait)
		defer cancel()
	}
	for {
		ok, freed, until, err := l.try()
		if ok || err != nil || l.b.flaw == impatientWait {
			return ok, err
		}
		timer := time.NewTimer(time.Until(until))
		select {
		case <-freed:
		case <-timer.C:
		case <-waitCtx.Done():
			timer.Stop()
			if err := ctx.Err(); err != nil {
				return false, fmt.Errorf("memlock: acquire: %w", err)
			}
			return false, nil
		}
		timer.Stop()
	}
}

// ReleaseCtx releases the lock if this Locker holds it.
func (l *memLocker) ReleaseCtx(ctx context.Context) (bool, error) {
	l.stopWatch(zerolock.ErrReleased)
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("memlock: release: %w", err)
	}
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.live(l.key)
	if h == nil || (h.owner != l && b.flaw != releasesAnyone) {
		return false, nil
	}
	delete(b.holds, l.key)
	if ch := b.freed[l.key]; ch != nil {
		close(ch)
		delete(b.freed, l.key)
	}
	return true, nil
}

// TTL returns the remaining time of the key's hold, whoever holds it.
func (l *memLocker) TTL(context.Context) (time.Duration, error) {
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.live(l.key)
	if h == nil {
		return 0, nil
	}
	return time.Until(h.until), nil
}

// Fence returns the token of this Locker's latest hold.
func (l *memLocker) Fence() int64 {
	return l.fence.Load()
}

// Watch renews the hold until ReleaseCtx.
func (l *memLocker) Watch(ctx context.Context, opts ...zerolock.WatchOption) context.Context {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dog != nil {
		select {
		case <-l.dog.done:
		default:
			return l.dog.ctx
		}
	}
	if l.b.flaw == hopelessWatch {
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(zerolock.ErrRenewFailed)
		return ctx
	}
	if !l.holds() {
		ctx, cancel := context.WithCancelCause(ctx)
		cancel(fmt.Errorf("%w: Watch of a lock that is not held", zerolock.ErrLockLost))
		return ctx
	}
	every := zerolock.ApplyWatchOptions(opts...).RenewEvery
	if every <= 0 || every >= l.expiry {
		every = l.expiry / 3
	}
	ctx, cancel := context.WithCancelCause(ctx)
	dog := &memWatch{ctx: ctx, cancel: cancel, done: make(chan struct{})}
	l.dog = dog
	go l.renew(dog, every)
	return ctx
}

// RefreshCtx extends this Locker's live hold to its full expiry.
func (l *memLocker) RefreshCtx(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("memlock: refresh: %w", err)
	}
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.live(l.key)
	switch {
	case h != nil && h.owner == l:
		h.until = time.Now().Add(l.expiry)
		return true, nil
	case h == nil && b.flaw == refreshRetakes:
		b.holds[l.key] = &memHold{owner: l, until: time.Now().Add(l.expiry)}
		return true, nil
	}
	return false, nil
}

// holds reports whether this Locker holds the lock.
func (l *memLocker) holds() bool {
	l.b.mu.Lock()
	defer l.b.mu.Unlock()
	h := l.b.live(l.key)
	return h != nil && h.owner == l
}

// renew extends the hold every so often until the watch ends or the hold
// is lost.
func (l *memLocker) renew(dog *memWatch, every time.Duration) {
	defer close(dog.done)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-dog.ctx.Done():
			return
		case <-ticker.C:
		}
		if l.b.flaw == lazyWatch {
			continue
		}
		b := l.b
		b.mu.Lock()
		h := b.live(l.key)
		if h != nil && h.owner == l {
			h.until = time.Now().Add(l.expiry)
		}
		b.mu.Unlock()
		if h == nil || h.owner != l {
			dog.cancel(zerolock.ErrLockLost)
			return
		}
	}
}

// stopWatch ends the running watch with cause and waits for it.
func (l *memLocker) stopWatch(cause error) {
	l.mu.Lock()
	dog := l.dog
	l.dog = nil
	l.mu.Unlock()
	if dog != nil {
		dog.cancel(cause)
		<-dog.done
	}
}

var (
	_ zerolock.Waiter  = (*memLocker)(nil)
	_ zerolock.TTLer   = (*memLocker)(nil)
	_ zerolock.Watcher = (*memLocker)(nil)
	_ zerolock.Fencer  = (*memLocker)(nil)
)
