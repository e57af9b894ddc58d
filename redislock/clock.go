package redislock

import "time"

// monoTime is a reading of the monotonic clock in nanoseconds since
// clockBase; zero means none. Reading it (monoNow) costs one clock read,
// where time.Now reads the wall clock as well, and it takes 8 bytes in a
// lock, where a time.Time takes 24: a lock made per request reads the
// clock twice per acquire (BenchmarkClientCycle).
type monoTime int64

// clockBase is a second before the process's first reading, so that no
// reading is zero.
var clockBase = time.Now().Add(-time.Second)

// monoNow returns the monotonic clock's reading now.
func monoNow() monoTime { return monoTime(time.Since(clockBase)) }

// monoOf returns t's monotonic reading (t from time.Now).
func monoOf(t time.Time) monoTime { return monoTime(t.Sub(clockBase)) }

// untimedHold is a keeper's heldSince for a hold that began while lock
// metrics were off: held, but not timed. No reading is 1 (see clockBase).
const untimedHold monoTime = 1

// isZero reports whether t is no reading.
func (t monoTime) isZero() bool { return t == 0 }

// add returns t plus d.
func (t monoTime) add(d time.Duration) monoTime { return t + monoTime(d) }

// after reports whether t is later than u.
func (t monoTime) after(u monoTime) bool { return t > u }

// since returns the time elapsed since t.
func (t monoTime) since() time.Duration { return time.Duration(monoNow() - t) }

// time returns t as a time.Time carrying the monotonic reading, for
// timers and deadlines, which use that reading. Its wall-clock reading is
// clockBase's plus the elapsed time: off by any step of the wall clock
// since the process started, so it is never shown or compared as a date.
func (t monoTime) time() time.Time { return clockBase.Add(time.Duration(t)) }
