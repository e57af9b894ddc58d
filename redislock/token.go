package redislock

import (
	"crypto/rand"
	"encoding/binary"
)

// newToken returns 128 bits from crypto/rand as 26 base32 characters: the
// token of the primitives whose holds no waiter marks (semaphores,
// multi-key and read-write locks).
// It never fails: crypto/rand.Text panics only when the OS has no entropy
// source, in which case nothing else would be safe either.
func newToken() string {
	return rand.Text()
}

// base32 is crypto/rand.Text's alphabet.
const base32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// Lock tokens (a RedisLock's, a RedLock's) are 26 base32 characters, 130
// bits from crypto/rand, and a 27th, lockTokenEnd. A waiter refused by such
// a hold turns the 27th into markedEnd in the script that refused it
// (acquire.lua): the hold is then "waited on", and its release announces
// itself. The release reads the mark in the value it reads anyway, where a
// separate waiter flag cost it a second key and about 2 µs of Redis per
// cycle. Older tokens (26 characters, and every other lock's) are never
// marked: their holders compare exactly, so a waiter flags them in a key
// of their own, as before (see waiters.go). A lock WithoutWakeups, which
// announces nothing, ends its token with quietTokenEnd, which waiters never
// mark either: its release may be the server's compare-and-delete command,
// which compares exactly.
const (
	lockTokenLen  = 27
	lockTokenEnd  = '.'
	markedEnd     = '!'
	quietTokenEnd = '_'
)

// newLockToken returns a lock token: 26 base32 characters from 130 bits of
// crypto/rand (as crypto/rand.Text makes them, which reads a byte for each
// character; 17 bytes here, crypto/rand's cost being mostly per byte),
// then lockTokenEnd, or quietTokenEnd for a lock that announces no
// release.
func newLockToken(quiet bool) string {
	var r [17]byte
	_, _ = rand.Read(r[:]) // never fails: see newToken
	lo, hi := binary.LittleEndian.Uint64(r[:8]), binary.LittleEndian.Uint64(r[8:16])
	var b [lockTokenLen]byte
	for i := range 12 { // 60 bits of each word
		b[i], b[13+i] = base32[lo&31], base32[hi&31]
		lo, hi = lo>>5, hi>>5
	}
	// Each word's last 4 bits and a bit of the 17th byte.
	b[12], b[25] = base32[lo|uint64(r[16]&1)<<4], base32[hi|uint64(r[16]&2)<<3]
	b[lockTokenLen-1] = lockTokenEnd
	if quiet {
		b[lockTokenLen-1] = quietTokenEnd
	}
	return string(b[:])
}

// isOwnHold reports whether held, a lock key's value, is the hold of
// token: token itself, or token marked by a waiter.
func isOwnHold(held, token string) bool {
	if held == token {
		return true
	}
	n := len(token)
	return n == lockTokenLen && token[n-1] == lockTokenEnd &&
		len(held) == n && held[n-1] == markedEnd && held[:n-1] == token[:n-1]
}
