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

// NewMemoryBackend returns a Backend that keeps its locks in this
// process's memory, on the monotonic clock: a stand-in for a lock service
// in the tests of code that takes a zerolock.Backend, as fstest.MapFS
// stands in for a file system. It passes Run with Waiter, TTLer, Watcher,
// Refresher and Fencer claimed, and its Lockers are all of those; they
// are not zerolock.Recorders, and the Backend is not a
// zerolock.SemaphoreBackend.
//
// Lockers of one key from one Backend exclude each other; two Backends
// share nothing. A hold lasts LockerOptions.Expiry exactly. Every
// acquisition mints a fencing token, whether or not LockerOptions.Fencing
// asks for one; LockerOptions.Name is not used. AcquireWaitCtx waits with
// no limit when its wait is zero or less, so that only its context bounds
// it, as redislock's does.
//
// A watched hold does not expire, and no goroutine renews it: the hold
// resumes expiring, a full expiry later, once the watch ends. The watch
// ends with zerolock.ErrReleased at ReleaseCtx, zerolock.ErrMaxHold when
// zerolock.MaxHold passes, and with the cause of the context given to
// Watch when that one ends; it never ends with zerolock.ErrRenewFailed.
// Watch of a lock the Locker does not hold returns a context already
// ended with zerolock.ErrLockLost.
//
// The only errors are these: every call but Watch and Fence returns one
// that errors.Is the context's error when its context has ended, and
// AcquireCtx and AcquireWaitCtx return one when LockerOptions.Expiry is
// not positive. The Backend keeps the latest fencing token of every key
// it has seen, so its memory grows with the number of keys: it is meant
// for tests, not for a long-running process.
func NewMemoryBackend() zerolock.Backend {
	return newMemoryBackend()
}

// errInvalidExpiry is what a Locker with an expiry that is not positive
// reports when asked to acquire.
var errInvalidExpiry = errors.New("locktest: the memory backend's LockerOptions.Expiry must be positive")

// memoryBackend is NewMemoryBackend's Backend.
type memoryBackend struct {
	mu    sync.Mutex
	holds map[string]*memoryHold   // the hold of each key, maybe expired
	fence map[string]int64         // the latest token of each key
	freed map[string]chan struct{} // closed, and replaced, on each release
}

// memoryHold is one hold of a key.
type memoryHold struct {
	owner *memoryLocker
	until time.Time
	watch *memoryWatch // the watch keeping the hold alive; nil when none
}

func newMemoryBackend() *memoryBackend {
	return &memoryBackend{
		holds: make(map[string]*memoryHold),
		fence: make(map[string]int64),
		freed: make(map[string]chan struct{}),
	}
}

// NewLocker returns a Locker on key; it does no work beyond that.
func (b *memoryBackend) NewLocker(key string, o zerolock.LockerOptions) zerolock.Locker {
	return b.newLocker(key, o)
}

func (b *memoryBackend) newLocker(key string, o zerolock.LockerOptions) *memoryLocker {
	return &memoryLocker{b: b, key: key, expiry: o.Expiry}
}

// live returns key's hold while it lasts, nil once it has expired; b.mu
// is held. A watched hold lasts a full expiry from now, whenever asked.
func (b *memoryBackend) live(key string) *memoryHold {
	h := b.holds[key]
	switch {
	case h == nil:
		return nil
	case h.watch != nil:
		h.until = time.Now().Add(h.owner.expiry)
	case !time.Now().Before(h.until):
		delete(b.holds, key)
		return nil
	}
	return h
}

// take gives l a new hold of its key, with the next fencing token; b.mu
// is held.
func (b *memoryBackend) take(l *memoryLocker) {
	b.fence[l.key]++
	b.holds[l.key] = &memoryHold{owner: l, until: time.Now().Add(l.expiry)}
	l.fence.Store(b.fence[l.key])
}

// drop ends key's hold and wakes its waiters; b.mu is held.
func (b *memoryBackend) drop(key string) {
	delete(b.holds, key)
	if ch := b.freed[key]; ch != nil {
		close(ch)
		delete(b.freed, key)
	}
}

// freedChan returns the channel the next release of key closes; b.mu is
// held.
func (b *memoryBackend) freedChan(key string) chan struct{} {
	ch := b.freed[key]
	if ch == nil {
		ch = make(chan struct{})
		b.freed[key] = ch
	}
	return ch
}

// memoryLocker is one Locker of a memoryBackend.
type memoryLocker struct {
	b      *memoryBackend
	key    string
	expiry time.Duration
	fence  atomic.Int64

	mu    sync.Mutex
	watch *memoryWatch // the latest watch; it may have ended
}

// AcquireCtx tries once to take the lock.
func (l *memoryLocker) AcquireCtx(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("locktest: acquire: %w", err)
	}
	ok, _, _, err := l.try()
	return ok, err
}

// try tries once to take the lock; when another holds it, it also returns
// the channel the next release closes and when the hold expires.
func (l *memoryLocker) try() (ok bool, freed <-chan struct{}, until time.Time, err error) {
	if l.expiry <= 0 {
		return false, nil, time.Time{}, errInvalidExpiry
	}
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch h := b.live(l.key); {
	case h == nil:
		b.take(l)
	case h.owner == l:
		h.until = time.Now().Add(l.expiry)
	default:
		return false, b.freedChan(l.key), h.until, nil
	}
	return true, nil, time.Time{}, nil
}

// ReleaseCtx releases the lock if this Locker holds it, ending its watch
// first.
func (l *memoryLocker) ReleaseCtx(ctx context.Context) (bool, error) {
	l.endWatch(zerolock.ErrReleased)
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("locktest: release: %w", err)
	}
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if h := b.live(l.key); h == nil || h.owner != l {
		return false, nil
	}
	b.drop(l.key)
	return true, nil
}

// TTL returns the remaining time of the key's hold, whoever holds it.
func (l *memoryLocker) TTL(ctx context.Context) (time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("locktest: ttl: %w", err)
	}
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
func (l *memoryLocker) Fence() int64 {
	return l.fence.Load()
}

// RefreshCtx extends this Locker's live hold to its full expiry.
func (l *memoryLocker) RefreshCtx(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("locktest: refresh: %w", err)
	}
	b := l.b
	b.mu.Lock()
	defer b.mu.Unlock()
	h := b.live(l.key)
	if h == nil || h.owner != l {
		return false, nil
	}
	h.until = time.Now().Add(l.expiry)
	return true, nil
}

var (
	_ zerolock.Waiter    = (*memoryLocker)(nil)
	_ zerolock.TTLer     = (*memoryLocker)(nil)
	_ zerolock.Watcher   = (*memoryLocker)(nil)
	_ zerolock.Refresher = (*memoryLocker)(nil)
	_ zerolock.Fencer    = (*memoryLocker)(nil)
)
