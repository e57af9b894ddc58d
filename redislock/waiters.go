package redislock

import (
	"time"

	"github.com/zerolock/zerolock/redislock/internal/slot"
)

// A release costs Redis about 2 µs more when it announces itself on the
// release channel (SPUBLISH), so a RedisLock announces only when a waiter
// said it is waiting: a waiting acquire's refused try sets the key's waiter
// flag, a companion key in its slot, in the same script that saw the lock
// held (acquire.lua, fence.lua), and release.lua publishes only while the
// flag exists. Since the refusal and the flag are one atomic step, and the
// waiter subscribed before that try, any release after it finds the flag
// and wakes the waiter. The flag lives longer than the longest sleep of
// the waiter between two tries (each try refreshes it), and is never
// deleted by a release, since other waiters may still sleep on it: it
// expires on its own, at most waiterFlagTTL after the last waiting try.

// waiterFlagMargin is what a waiter's flag outlives its back-off by: the
// round trips and scheduling between one try and the next.
const waiterFlagMargin = 250 * time.Millisecond

// waiterFlag names the key's waiter flag: a key in key's hash slot, so the
// scripts may touch it on Redis Cluster.
func waiterFlag(key string) string {
	return slot.Companion(key, waiterFlagSuffix)
}

// waiterFlagSuffix names a key's waiter flag (slot.Companion).
const waiterFlagSuffix = "zerolock.waiting"

// waiterFlagTTL is how long a waiting try's flag lives: twice the longest
// back-off the waiter sleeps between two tries, plus a margin. A flag that
// expired early would cost a release's announcement, and the waiter would
// notice the release at its next back-off retry.
func waiterFlagTTL(w waitOptions) time.Duration {
	return 2*w.maxBackoff + waiterFlagMargin
}

// waitingKeys are the keys of a waiting acquire's script: the lock's own
// (the key, and the fencing counter when fencing), then its waiter flag.
func (rl *RedisLock) waitingKeys() []string {
	if !rl.fencing && len(rl.releaseKeys()) == 2 {
		return rl.releaseKeys() // {key, waiter flag}, built once
	}
	keys := rl.lockKeys()
	if rl.fencing {
		keys = rl.fenceKeys
	}
	return append(keys[:len(keys):len(keys)], waiterFlag(rl.key))
}
