package redislock_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock"
)

// TestRateClockReadsEarlier: Redis's TIME is the wall clock, which can read
// earlier than a moment before (seen on a loaded machine: five admissions
// of a quota of four logged within 99.7ms of a 100ms period). Read earlier
// than the key's newest admission by under a period, the key's time stands
// still at that admission, so the times logged never go back and no
// period-long window of them holds more than the quota; read earlier by a
// period or more, the clock is taken as it is and the admissions logged
// before count until a period after their time. miniredis, whose TIME is
// set by the test.
func TestRateClockReadsEarlier(t *testing.T) {
	mr := miniredis.RunT(t)
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	b := redislock.NewBackend(client)
	const quota, period, key = 2, 100 * time.Millisecond, "zerolock-test:rate-clock"
	start := time.UnixMicro(1_800_000_000_000_000)
	at := func(d time.Duration) {
		mr.SetTime(start.Add(d))
	}
	count := func(what string, admitted bool) (retryAfter, reset time.Duration, now int64) {
		t.Helper()
		r, now := rateAt(t, b, key, quota, period)
		if r.Admitted != admitted {
			t.Fatalf("%s: %+v, want admitted %v", what, r, admitted)
		}
		return r.RetryAfter, r.Reset, now
	}
	at(0)
	_, _, first := count("first", true)
	count("second, in the same µs", true)
	at(period)
	_, _, third := count("a period later", true)
	if third != first+period.Microseconds() {
		t.Fatalf("counted at %d µs, want %d", third, first+period.Microseconds())
	}
	// One millisecond earlier than the newest admission: admitted (one
	// place is free), counted at the newest admission's time, not at TIME,
	// which would put three admissions in the period after the first.
	at(period - time.Millisecond)
	_, reset, fourth := count("after the clock read 1ms earlier", true)
	if fourth != third {
		t.Fatalf("counted at %d µs after the clock read 1ms earlier than the newest admission at %d: times logged went back, "+
			"and the period from %d µs holds three admissions, over the quota %d", fourth, third, first, quota)
	}
	if reset != period {
		t.Fatalf("Reset %v, want %v: the log empties a period after its newest", reset, period)
	}
	retryAfter, reset, fifth := count("with the log full", false)
	if fifth != third || retryAfter != period || reset != period {
		t.Fatalf("refused at %d µs with RetryAfter %v, Reset %v; want at %d, both %v", fifth, retryAfter, reset, third, period)
	}
	// The clock passes the newest admission again: time moves on.
	at(period + 40*time.Millisecond)
	retryAfter, _, sixth := count("40ms after the newest admission", false)
	if sixth != third+40_000 || retryAfter != 60*time.Millisecond {
		t.Fatalf("refused at %d µs with RetryAfter %v, want at %d with 60ms", sixth, retryAfter, third+40_000)
	}
	// A step back of a period or more is taken as it is: the log's
	// admissions, logged later than now, count until a period after their
	// time.
	at(-time.Minute)
	retryAfter, reset, seventh := count("after the clock stepped back a minute", false)
	if want := start.Add(-time.Minute).UnixMicro(); seventh != want {
		t.Fatalf("counted at %d µs after a step back of a minute, want the clock's %d", seventh, want)
	}
	if want := time.Minute + 2*period; retryAfter != want || reset != want {
		t.Fatalf("RetryAfter %v, Reset %v after a step back of a minute; want both %v", retryAfter, reset, want)
	}
}
