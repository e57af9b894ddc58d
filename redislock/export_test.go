package redislock

import (
	"context"
	"slices"
	"time"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock/internal/conn"
	"github.com/zerolock/zerolock/redislock/internal/gozero"
	"github.com/zerolock/zerolock/redislock/internal/hub"
)

// ReleaseChannel exposes hub.Channel, a key's release channel, to the
// external tests.
var ReleaseChannel = hub.Channel

// HubWaiters counts this process's waiters on key's release channel.
func HubWaiters(store Store, key string) int {
	h := hub.For(context.Background(), wrapped(store), key)
	if h == nil {
		return 0
	}
	return h.Waiters(hub.Channel(key))
}

// RecordingLock is the lock a NewBackend backend makes: a RedisLock that is
// also a zerolock.Recorder.
type RecordingLock = recordingLock

// Recording wraps l as NewBackend's NewLocker does, for the tests of the
// replay primitives.
func Recording(l *RedisLock) RecordingLock { return recordingLock{l} }

// ErrInvalidRetain exposes errInvalidRetain to the external tests.
var ErrInvalidRetain = errInvalidRetain

// CheckGoZeroStore exposes go-zero's identity check (gozero.CheckStore) to the external tests.
var CheckGoZeroStore = gozero.CheckStore

// SemaphoreKey returns s's Redis key.
func SemaphoreKey(s *Semaphore) string { return s.key }

// SemaphorePermits returns how many holders s lets in at once.
func SemaphorePermits(s *Semaphore) int { return s.permits }

// SemaphoreHolders exposes holders: how many permits of s are live now.
func SemaphoreHolders(ctx context.Context, s *Semaphore) (int, error) { return s.holders(ctx) }

// MultiLockKeys returns a copy of m's keys in the order it takes them.
func MultiLockKeys(m *MultiLock) []string { return slices.Clone(m.keys) }

// SetSemaphoreExpiry changes s's expiry after construction, as WithExpiry
// sets it, for the next acquire or renewal.
func SetSemaphoreExpiry(s *Semaphore, expiry time.Duration) { s.expiry.Store(int64(expiry)) }

// wrapped is store probed, as a lock's constructor probes it.
func wrapped(store Store) *conn.Conn {
	c := conn.Wrap(store)
	return &c
}

// RateAt is the Rate of backend b (a NewBackend backend) for the request
// named member in the log (a fresh name when empty), that also reports the
// server's clock when it answered, in microseconds since the epoch, or the
// later time a new admission was logged at.
func RateAt(ctx context.Context, b zerolock.Backend, key string, quota int, period time.Duration,
	member string) (zerolock.RateResult, int64, error) {
	if member == "" {
		member = nextRateMember()
	}
	return b.(storeBackend).rate(ctx, key, quota, period, member)
}

// NewToken is a new lock's token, for the floor of a cycle that makes a
// new lock each time.
var NewToken = newToken
