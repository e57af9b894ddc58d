package redislock_test

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock"
)

// TestRateClockReadsEarlier: Redis's TIME is the wall clock, which can read
// earlier than it did (CI once logged five admissions of a quota of four
// within 99.7ms of a 100ms period). A request admitted while the clock
// reads earlier than the key's newest admission by under a period is
// logged at that admission's time, so no period-long window of the times
// logged holds more than the quota; RetryAfter, Reset and the key's expiry
// still count from the clock as it reads. Read a period or more earlier,
// the clock is taken as it is and admissions logged before count until a
// period after their time. miniredis, whose TIME the test sets.
func TestRateClockReadsEarlier(t *testing.T) {
	mr := miniredis.RunT(t)
	client := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	b := redislock.NewBackend(client)
	const quota, period = 2, 100 * time.Millisecond
	start := time.UnixMicro(1_800_000_000_000_000)
	at := func(d time.Duration) { mr.SetTime(start.Add(d)) }
	ms := time.Millisecond
	count := func(key, what string, admitted bool) (retryAfter, reset time.Duration, now int64) {
		t.Helper()
		r, now := rateAt(t, b, key, quota, period)
		if r.Admitted != admitted {
			t.Fatalf("%s: %+v, want admitted %v", what, r, admitted)
		}
		return r.RetryAfter, r.Reset, now
	}
	micros := func(d time.Duration) int64 { return start.Add(d).UnixMicro() }

	key := "zerolock-test:rate-clock"
	at(0)
	count(key, "first", true)
	count(key, "second, in the same µs", true)
	at(period)
	if _, _, now := count(key, "a period later", true); now != micros(period) {
		t.Fatalf("counted at %d µs, want %d", now, micros(period))
	}
	// 1ms earlier than the newest admission: admitted (a place is free),
	// logged at the newest admission's time, not at TIME, which would put
	// three admissions in the period from the first.
	at(period - ms)
	_, reset, now := count(key, "after the clock read 1ms earlier", true)
	if now != micros(period) {
		t.Fatalf("logged at %d µs after the clock read 1ms earlier than the newest admission at %d: "+
			"the period from the first admissions holds three, over the quota %d", now, micros(period), quota)
	}
	// Both admissions leave the window when the clock reads 2×period, 101ms
	// from now: Reset and the key's expiry count from the clock.
	if want := period + ms; reset != want || mr.TTL(key) != want {
		t.Fatalf("Reset %v, key's TTL %v; want both %v", reset, mr.TTL(key), want)
	}
	retryAfter, reset, now := count(key, "with the log full", false)
	if want := period + ms; now != micros(period-ms) || retryAfter != want || reset != want {
		t.Fatalf("refused at %d µs with RetryAfter %v, Reset %v; want at %d, both %v",
			now, retryAfter, reset, micros(period-ms), want)
	}
	at(period + 40*ms)
	if retryAfter, _, _ := count(key, "40ms after the newest admission", false); retryAfter != 60*ms {
		t.Fatalf("RetryAfter %v, want 60ms", retryAfter)
	}
	// A step back of a period or more is taken as it is: the log's
	// admissions, logged later than now, count until a period after their
	// time.
	at(-time.Minute)
	retryAfter, reset, now = count(key, "after the clock stepped back a minute", false)
	if want := time.Minute + 2*period; now != micros(-time.Minute) || retryAfter != want || reset != want {
		t.Fatalf("refused at %d µs with RetryAfter %v, Reset %v after a step back of a minute; want at %d, both %v",
			now, retryAfter, reset, micros(-time.Minute), want)
	}

	// After a step back of more than a period, an admission logged at the
	// clock's earlier time counts for a period of that clock, even once the
	// clock reads within a period of the admissions logged before the step.
	key += ":back"
	at(time.Second)
	count(key, "before the step", true)
	at(time.Second - 150*ms)
	_, reset, now = count(key, "150ms earlier", true)
	if now != micros(time.Second-150*ms) {
		t.Fatalf("logged at %d µs after a step back of 150ms, want the clock's %d", now, micros(time.Second-150*ms))
	}
	// The key outlives the admission logged before the step: 250ms.
	if want := 250 * ms; reset != want || mr.TTL(key) != want {
		t.Fatalf("Reset %v, key's TTL %v after a step back of 150ms; want both %v", reset, mr.TTL(key), want)
	}
	at(time.Second - 90*ms)
	if retryAfter, _, _ := count(key, "60ms later, both admissions in their period", false); retryAfter != 40*ms {
		t.Fatalf("RetryAfter %v, want 40ms: until the admission logged after the step leaves its period", retryAfter)
	}
}
