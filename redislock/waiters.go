package redislock

import (
	"time"

	"github.com/zerolock/zerolock/redislock/internal/slot"
)

// A release costs Redis about 2 µs more when it announces itself on the
// release channel (SPUBLISH), so a RedisLock announces only when a waiter
// said it is waiting, and the release learns it from the value it reads
// anyway: a waiting acquire's refused try marks the hold (a lock token's
// last character, lockTokenEnd, becomes markedEnd: see token.go and
// acquire.lua) in the same script that saw the lock held, and release.lua
// publishes only when it deletes a marked hold of its token. Since the
// refusal and the mark are one atomic step, and the waiter subscribed
// before that try, any release after it wakes the waiter. A process's hub
// wakes one waiter per release, so a hold that a waiting acquire wins
// starts marked: its peers may still wait. The mark lives as long as the
// hold, which the holder's scripts keep marked when they refresh it. The
// flag outlived holds, the mark does not: when a process's woken waiter
// wins a hold that is not marked (it was made WithoutWakeups, or it is an
// RWLock reader's share, which leaves the key alone) and another process
// then takes the key without waiting, that holder's release announces
// nothing, and the process's other waiters get the key at their back-off
// (500 ms at most by default) instead of at once.
//
// A hold that cannot be marked, because its holder compares its token
// exactly (go-zero's own lock, a zerolock from before lock tokens, an
// RWLock's writer, a MultiLock's keys), gets the waiter flag instead: a
// companion key in its slot, which such a holder's release checks (older
// zerolocks), or which it ignores and announces every release (RWLock,
// MultiLock), or neither (go-zero's lock: its waiters back off). The flag
// lives longer than the longest sleep of the waiter between two tries
// (each try refreshes it), and is never deleted by a release, since other
// waiters may still sleep on it: it expires on its own, at most
// waiterFlagTTL after the last waiting try.

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
	keys := rl.lockKeys()
	if rl.fencing {
		keys = rl.more.fenceKeys
	}
	return append(keys[:len(keys):len(keys)], waiterFlag(rl.Key()))
}

// waitingArgs are the arguments of a waiting acquire's script for an
// expiry of px: the token, px, the waiter flag's expiry and, unless
// WithoutWakeups, "1" to take the key marked (see acquire.lua).
func (rl *RedisLock) waitingArgs(px time.Duration) []any {
	args := []any{rl.tokenArg(), px.Milliseconds(), rl.more.flagPX}
	if rl.markWins() {
		args = append(args, "1")
	}
	return args
}
