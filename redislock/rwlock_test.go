package redislock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/internal/testing/testproc"
	"github.com/zerolock/zerolock/redislock"
)

// rwBackoffFloor is the shortest sleep of a waiter made WithBackoff(10s,
// 10s): its back-off is jittered over [5 s, 10 s). A waiter that returns
// sooner after a release was woken by it.
const rwBackoffFloor = 5 * time.Second

// rwSlowBackoff makes waiters that only a wake-up can bring back early.
var rwSlowBackoff = redislock.WithBackoff(10*time.Second, 10*time.Second)

// newRW returns an RWLock on key in b's store with a 30 s expiry (no hold
// of a test expires unless the test wants it), then opts.
func newRW(b backend, key string, opts ...redislock.Option) *redislock.RWLock {
	return redislock.NewRWLock(b.store(), key, append([]redislock.Option{redislock.WithExpiry(30 * time.Second)}, opts...)...)
}

// want fails the test unless a call returned (ok, nil).
func rwWant(t *testing.T, what string, ok bool, err error, wantOK bool) {
	t.Helper()
	if ok != wantOK || err != nil {
		t.Fatalf("%s = %v, %v; want %v, nil", what, ok, err, wantOK)
	}
}

// companion is the name redislock gives a companion of a key without
// braces (see slot.Companion); the tests check the key exists where they
// use it, so a change of the scheme fails loudly.
func rwCompanion(key, suffix string) string {
	return "{" + key + "}:" + suffix + "|2"
}

// serverMillis is the server's clock in milliseconds, as the scripts read
// it.
func rwServerMillis(t *testing.T, admin redis.Cmdable) int64 {
	t.Helper()
	now, err := admin.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMilli()
}

// result is what a call returned on another goroutine, and when.
type rwResult struct {
	ok  bool
	err error
	at  time.Time
}

// inBackground runs call on another goroutine.
func rwInBackground(call func() (bool, error)) <-chan rwResult {
	done := make(chan rwResult, 1)
	go func() {
		ok, err := call()
		done <- rwResult{ok, err, time.Now()}
	}()
	return done
}

// waitFor polls cond until it holds, failing the test after 10 s.
func rwWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// wokenWithin fails the test unless done delivers (true, nil) before the
// back-off floor passed since released.
func rwWokenWithin(t *testing.T, who string, done <-chan rwResult, released time.Time) {
	t.Helper()
	select {
	case r := <-done:
		if !r.ok || r.err != nil {
			t.Fatalf("%s = %v, %v; want true, nil", who, r.ok, r.err)
		}
		if d := r.at.Sub(released); d >= rwBackoffFloor {
			t.Fatalf("%s got the lock %v after the release: its back-off, not a wake-up", who, d)
		}
	case <-time.After(time.Until(released.Add(rwBackoffFloor))):
		t.Fatalf("%s not woken %v after the release (its back-off is longer)", who, rwBackoffFloor)
	}
}

// rwWorkload is what runRWExclusion measured.
type rwWorkload struct {
	reads, writes, refused int64
	maxReaders             int64
}

// runRWExclusion runs goroutines, each with its own RWLock on key, that
// read or write at random (a third of the writes and reads wait) until d
// passed, and checks the exact invariant with in-process counters: never
// a writer beside a reader or another writer.
func runRWExclusion(t *testing.T, newLock func() *redislock.RWLock, goroutines int, d time.Duration) rwWorkload {
	t.Helper()
	var (
		readers, writers atomic.Int64
		w                rwWorkload
		reads, writes    atomic.Int64
		refused, maxR    atomic.Int64
		wg               sync.WaitGroup
	)
	ctx := context.Background()
	deadline := time.Now().Add(d)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 19))
			l := newLock()
			for time.Now().Before(deadline) {
				write, wait := r.IntN(4) == 0, r.IntN(3) == 0
				var ok bool
				var err error
				switch {
				case write && wait:
					ok, err = l.LockWaitCtx(ctx, 100*time.Millisecond)
				case write:
					ok, err = l.LockCtx(ctx)
				case wait:
					ok, err = l.RLockWaitCtx(ctx, 100*time.Millisecond)
				default:
					ok, err = l.RLockCtx(ctx)
				}
				if err != nil {
					t.Errorf("goroutine %d: acquire: %v", g, err)
					return
				}
				if !ok {
					refused.Add(1)
					continue
				}
				hold := time.Duration(r.IntN(300)) * time.Microsecond
				if write {
					if n := writers.Add(1); n != 1 {
						t.Errorf("goroutine %d: %d writers at once", g, n)
					}
					if n := readers.Load(); n != 0 {
						t.Errorf("goroutine %d: a writer beside %d readers", g, n)
					}
					writes.Add(1)
					time.Sleep(hold)
					writers.Add(-1)
					ok, err = l.UnlockCtx(ctx)
				} else {
					n := readers.Add(1)
					if m := writers.Load(); m != 0 {
						t.Errorf("goroutine %d: a reader beside %d writers", g, m)
					}
					for cur := maxR.Load(); n > cur && !maxR.CompareAndSwap(cur, n); cur = maxR.Load() {
					}
					reads.Add(1)
					time.Sleep(hold)
					readers.Add(-1)
					ok, err = l.RUnlockCtx(ctx)
				}
				if !ok || err != nil {
					t.Errorf("goroutine %d: release of a held side (write %v) = %v, %v", g, write, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	w.reads, w.writes, w.refused, w.maxReaders = reads.Load(), writes.Load(), refused.Load(), maxR.Load()
	if w.reads == 0 || w.writes == 0 {
		t.Errorf("%d reads and %d writes: both sides must have run", w.reads, w.writes)
	}
	if w.maxReaders < 2 {
		t.Errorf("at most %d reader at once: readers never shared the lock", w.maxReaders)
	}
	return w
}

// TestRWLockExclusion: 12 goroutines, each with its own RWLock on one key,
// read (3 in 4) or write at random, by single tries and by waits, on both
// stores: never a writer beside a reader or another writer, and readers do
// hold the lock together.
func TestRWLockExclusion(t *testing.T) {
	srv := redistest.Start(t)
	for _, b := range backends(t, srv) {
		t.Run(b.name, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			w := runRWExclusion(t, func() *redislock.RWLock { return newRW(b, key) }, 12, time.Second)
			t.Logf("%d reads, %d writes, %d refused, up to %d readers at once", w.reads, w.writes, w.refused, w.maxReaders)
		})
	}
}

// TestRWLockReaderShareExpires: two readers hold; the one with a short
// expiry loses its share on its own, the other keeps its own, and a
// writer is refused until that one unlocks too. A writer polling behind a
// lone short share gets the lock once it expired, never before.
func TestRWLockReaderShareExpires(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		const expiry = 200 * time.Millisecond
		short := newRW(b, key, redislock.WithExpiry(expiry), redislock.WithTolerance(0))
		long, writer := newRW(b, key), newRW(b, key)
		ok, err := long.RLockCtx(context.Background())
		rwWant(t, "long reader's RLock", ok, err, true)
		readers := rwCompanion(key, "zerolock.readers")
		longShare := admin.ZRange(ctx, readers, 0, -1).Val()
		start := time.Now()
		ok, err = short.RLockCtx(context.Background())
		rwWant(t, "short reader's RLock", ok, err, true)
		shares := admin.ZRangeWithScores(ctx, readers, 0, -1).Val()
		if len(shares) != 2 || len(longShare) != 1 {
			t.Fatalf("%s has shares %v, want 2", readers, shares)
		}
		shortEnds := shares[0].Score // the earliest to expire
		if shares[0].Member == longShare[0] {
			t.Fatalf("the long share %v expires first", shares)
		}
		ok, err = writer.LockCtx(context.Background())
		rwWant(t, "writer's Lock beside two readers", ok, err, false)

		rwWaitFor(t, "the short share's expiry passed on the server's clock", func() bool {
			return float64(rwServerMillis(t, admin)) > shortEnds
		})
		ok, err = short.RefreshCtx(context.Background())
		rwWant(t, "Refresh of the expired share", ok, err, false)
		if d := time.Since(start); d < expiry-2*time.Millisecond {
			t.Fatalf("the short share ended %v after its RLock, before its expiry %v", d, expiry)
		}
		ok, err = short.RUnlockCtx(context.Background())
		rwWant(t, "RUnlock of the expired share", ok, err, false)
		ok, err = writer.LockCtx(context.Background())
		rwWant(t, "writer's Lock beside the long reader", ok, err, false)
		ok, err = long.RefreshCtx(context.Background())
		rwWant(t, "long reader's Refresh after the short share expired", ok, err, true)
		ok, err = long.RUnlockCtx(context.Background())
		rwWant(t, "long reader's RUnlock", ok, err, true)
		ok, err = writer.LockCtx(context.Background())
		rwWant(t, "writer's Lock with no share left", ok, err, true)
		ok, err = writer.UnlockCtx(context.Background())
		rwWant(t, "writer's Unlock", ok, err, true)

		// A writer behind a lone share that expires.
		start = time.Now()
		ok, err = short.RLockCtx(context.Background())
		rwWant(t, "short reader's RLock again", ok, err, true)
		rwWaitFor(t, "the writer got the lock behind an expiring share", func() bool {
			ok, err := writer.LockCtx(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			return ok
		})
		if d := time.Since(start); d < expiry-2*time.Millisecond {
			t.Fatalf("the writer got the lock %v after the share was taken, before its expiry %v", d, expiry)
		}
		ok, err = writer.UnlockCtx(context.Background())
		rwWant(t, "writer's Unlock", ok, err, true)
		if n := admin.Exists(ctx, readers).Val(); n != 0 {
			t.Fatalf("the readers' set outlived its last share")
		}
	})
}

// TestRWLockWriterPreference: while a writer waits behind two readers, a
// new reader is refused (a reader already holding may still refresh its
// share), and a waiting reader does not get in ahead of the writer once
// the two readers unlock; it gets in when the writer unlocks. A single
// LockCtx try holds no reader back.
func TestRWLockWriterPreference(t *testing.T) {
	eachBackend(t, redistest.Start(t), func(t *testing.T, b backend, admin *redis.Client, key string) {
		checkRWWriterPreference(t, b, admin, key)
	})
}

// checkRWWriterPreference is TestRWLockWriterPreference on b; admin is a client of
// b's deployment.
func checkRWWriterPreference(t *testing.T, b backend, admin redis.Cmdable, key string) {
	ctx := context.Background()
	r1, r2, r3, late := newRW(b, key), newRW(b, key), newRW(b, key, rwSlowBackoff), newRW(b, key)
	writer := newRW(b, key, rwSlowBackoff)
	for i, r := range []*redislock.RWLock{r1, r2} {
		ok, err := r.RLockCtx(context.Background())
		rwWant(t, fmt.Sprintf("reader %d's RLock", i+1), ok, err, true)
	}
	ok, err := writer.LockCtx(context.Background())
	rwWant(t, "a single LockCtx beside readers", ok, err, false)
	ok, err = late.RLockCtx(context.Background())
	rwWant(t, "a new reader after a single refused LockCtx", ok, err, true)
	ok, err = late.RUnlockCtx(context.Background())
	rwWant(t, "its RUnlock", ok, err, true)

	wrote := rwInBackground(func() (bool, error) { return writer.LockWaitCtx(ctx, 30*time.Second) })
	rwWaitFor(t, "a new reader is refused while the writer waits", func() bool {
		ok, err := late.RLockCtx(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if ok, err := late.RUnlockCtx(context.Background()); !ok || err != nil {
				t.Fatalf("RUnlock = %v, %v", ok, err)
			}
		}
		return !ok
	})
	if n := admin.Exists(ctx, rwCompanion(key, "zerolock.writer-waiting")).Val(); n != 1 {
		t.Fatal("no intent key while the writer waits")
	}
	ok, err = r1.RLockCtx(context.Background())
	rwWant(t, "a holding reader's re-entrant RLock while the writer waits", ok, err, true)

	read := rwInBackground(func() (bool, error) { return r3.RLockWaitCtx(ctx, 30*time.Second) })
	rwWaitFor(t, "the writer and a reader wait", func() bool { return redislock.HubWaiters(b.store(), key) == 2 })
	ok, err = r1.RUnlockCtx(context.Background())
	rwWant(t, "reader 1's RUnlock", ok, err, true)
	ok, err = r2.RUnlockCtx(context.Background())
	rwWant(t, "reader 2's RUnlock", ok, err, true)
	released := time.Now()
	rwWokenWithin(t, "the waiting writer", wrote, released)
	select {
	case r := <-read:
		t.Fatalf("the waiting reader got %v, %v while the writer holds", r.ok, r.err)
	default:
	}
	if n := admin.Exists(ctx, rwCompanion(key, "zerolock.writer-waiting")).Val(); n != 0 {
		t.Fatal("the writer's intent outlived its acquire")
	}
	ok, err = writer.UnlockCtx(context.Background())
	rwWant(t, "writer's Unlock", ok, err, true)
	rwWokenWithin(t, "the waiting reader", read, time.Now())
	ok, err = r3.RUnlockCtx(context.Background())
	rwWant(t, "the woken reader's RUnlock", ok, err, true)
}

// TestRWLockWokenWaiters: two readers waiting behind a writer both get the
// lock when it unlocks, and a writer waiting behind two readers gets it
// when the last one unlocks (not the first), each before a 5-10 s back-off
// could have brought it back.
func TestRWLockWokenWaiters(t *testing.T) {
	eachBackend(t, redistest.Start(t), func(t *testing.T, b backend, admin *redis.Client, key string) {
		checkRWWokenWaiters(t, b, admin, key)
	})
}

// checkRWWokenWaiters is TestRWLockWokenWaiters on b; admin is a client of
// b's deployment.
func checkRWWokenWaiters(t *testing.T, b backend, _ redis.Cmdable, key string) {
	ctx := context.Background()
	w1, w2 := newRW(b, key), newRW(b, key, rwSlowBackoff)
	r1, r2 := newRW(b, key, rwSlowBackoff), newRW(b, key, rwSlowBackoff)
	ok, err := w1.LockCtx(context.Background())
	rwWant(t, "writer's Lock", ok, err, true)
	read1 := rwInBackground(func() (bool, error) { return r1.RLockWaitCtx(ctx, 30*time.Second) })
	read2 := rwInBackground(func() (bool, error) { return r2.RLockWaitCtx(ctx, 30*time.Second) })
	rwWaitFor(t, "both readers wait", func() bool { return redislock.HubWaiters(b.store(), key) == 2 })
	ok, err = w1.UnlockCtx(context.Background())
	rwWant(t, "writer's Unlock", ok, err, true)
	released := time.Now()
	rwWokenWithin(t, "reader 1", read1, released)
	rwWokenWithin(t, "reader 2", read2, released)

	wrote := rwInBackground(func() (bool, error) { return w2.LockWaitCtx(ctx, 30*time.Second) })
	rwWaitFor(t, "the writer waits", func() bool { return redislock.HubWaiters(b.store(), key) == 1 })
	ok, err = r1.RUnlockCtx(context.Background())
	rwWant(t, "reader 1's RUnlock", ok, err, true)
	select {
	case r := <-wrote:
		t.Fatalf("the writer got %v, %v while reader 2 holds", r.ok, r.err)
	default:
	}
	ok, err = r2.RUnlockCtx(context.Background())
	rwWant(t, "reader 2's RUnlock", ok, err, true)
	rwWokenWithin(t, "the waiting writer", wrote, time.Now())
	ok, err = w2.UnlockCtx(context.Background())
	rwWant(t, "the woken writer's Unlock", ok, err, true)
}

// TestRWLockWriterGivesUp: a writer whose wait ends behind a reader
// deletes its intent and wakes the reader it held back, and readers get in
// again at once.
func TestRWLockWriterGivesUp(t *testing.T) {
	eachBackend(t, redistest.Start(t), func(t *testing.T, b backend, admin *redis.Client, key string) {
		checkRWWriterGivesUp(t, b, admin, key)
	})
}

// checkRWWriterGivesUp is TestRWLockWriterGivesUp on b; admin is a client of
// b's deployment.
func checkRWWriterGivesUp(t *testing.T, b backend, admin redis.Cmdable, key string) {
	ctx := context.Background()
	r1, r2, probe := newRW(b, key), newRW(b, key, rwSlowBackoff), newRW(b, key)
	writer := newRW(b, key, rwSlowBackoff)
	ok, err := r1.RLockCtx(context.Background())
	rwWant(t, "reader 1's RLock", ok, err, true)
	gate := make(chan struct{})
	wrote := rwInBackground(func() (bool, error) {
		waitCtx, cancel := context.WithCancel(ctx)
		go func() { <-gate; cancel() }()
		return writer.LockWaitCtx(waitCtx, 30*time.Second)
	})
	rwWaitFor(t, "the writer's intent holds readers back", func() bool {
		ok, err := probe.RLockCtx(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			_, _ = probe.RUnlockCtx(context.Background())
		}
		return !ok
	})
	read := rwInBackground(func() (bool, error) { return r2.RLockWaitCtx(ctx, 30*time.Second) })
	rwWaitFor(t, "the writer and a reader wait", func() bool { return redislock.HubWaiters(b.store(), key) == 2 })
	close(gate) // the writer's context ends
	r := <-wrote
	if r.ok || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled LockWaitCtx = %v, %v; want false and context.Canceled", r.ok, r.err)
	}
	rwWokenWithin(t, "the reader held back by the writer", read, r.at)
	if n := admin.Exists(ctx, rwCompanion(key, "zerolock.writer-waiting")).Val(); n != 0 {
		t.Fatal("the writer's intent outlived its wait")
	}
	ok, err = probe.RLockCtx(context.Background())
	rwWant(t, "a new reader after the writer gave up", ok, err, true)

	// A wait limit, as a cancelled context, leaves nothing behind.
	ok, err = writer.LockWaitCtx(ctx, 100*time.Millisecond)
	rwWant(t, "LockWaitCtx(100ms) beside readers", ok, err, false)
	if n := admin.Exists(ctx, rwCompanion(key, "zerolock.writer-waiting")).Val(); n != 0 {
		t.Fatal("the writer's intent outlived its wait limit")
	}
	for _, l := range []*redislock.RWLock{r1, r2, probe} {
		ok, err := l.RUnlockCtx(context.Background())
		rwWant(t, "RUnlock", ok, err, true)
	}
}

// TestRWLockReleaseByNonHolder: releases by instances that do not hold the
// side they release report false, nil and leave the holders alone.
func TestRWLockReleaseByNonHolder(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		reader, writer, other := newRW(b, key), newRW(b, key), newRW(b, key)
		ok, err := other.RUnlockCtx(context.Background())
		rwWant(t, "RUnlock of a free lock", ok, err, false)
		ok, err = other.UnlockCtx(context.Background())
		rwWant(t, "Unlock of a free lock", ok, err, false)

		ok, err = writer.LockCtx(context.Background())
		rwWant(t, "writer's Lock", ok, err, true)
		ok, err = other.UnlockCtx(context.Background())
		rwWant(t, "Unlock by a non-holder while a writer holds", ok, err, false)
		ok, err = other.RUnlockCtx(context.Background())
		rwWant(t, "RUnlock by a non-holder while a writer holds", ok, err, false)
		ok, err = writer.RUnlockCtx(context.Background())
		rwWant(t, "RUnlock by the writer (it holds no share)", ok, err, false)
		ok, err = reader.RLockCtx(context.Background())
		rwWant(t, "RLock while the writer holds", ok, err, false)
		ok, err = reader.RUnlockCtx(context.Background())
		rwWant(t, "RUnlock by a refused reader", ok, err, false)
		ok, err = other.LockCtx(context.Background())
		rwWant(t, "Lock while the writer still holds", ok, err, false)
		ok, err = writer.UnlockCtx(context.Background())
		rwWant(t, "writer's Unlock", ok, err, true)
		ok, err = writer.UnlockCtx(context.Background())
		rwWant(t, "writer's second Unlock", ok, err, false)

		ok, err = reader.RLockCtx(context.Background())
		rwWant(t, "reader's RLock", ok, err, true)
		ok, err = other.RUnlockCtx(context.Background())
		rwWant(t, "RUnlock by a non-holder while a reader holds", ok, err, false)
		ok, err = reader.UnlockCtx(context.Background())
		rwWant(t, "Unlock by the reader (it holds no write)", ok, err, false)
		if n := admin.ZCard(ctx, rwCompanion(key, "zerolock.readers")).Val(); n != 1 {
			t.Fatalf("%d shares after the non-holders' releases, want the reader's", n)
		}
		ok, err = reader.RUnlockCtx(context.Background())
		rwWant(t, "reader's RUnlock", ok, err, true)
		ok, err = reader.RUnlockCtx(context.Background())
		rwWant(t, "reader's second RUnlock", ok, err, false)
	})
}

// TestRWLockOtherSideHeld: an instance holding one side asking for the
// other gets ErrOtherSideHeld, by a try and by a wait, and keeps its hold.
func TestRWLockOtherSideHeld(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, _ *redis.Client, key string) {
		ctx := context.Background()
		l := newRW(b, key)
		ok, err := l.LockCtx(context.Background())
		rwWant(t, "Lock", ok, err, true)
		if ok, err := l.RLockCtx(context.Background()); ok || !errors.Is(err, redislock.ErrOtherSideHeld) {
			t.Fatalf("RLock while holding the write side = %v, %v; want ErrOtherSideHeld", ok, err)
		}
		if ok, err := l.RLockWaitCtx(ctx, time.Second); ok || !errors.Is(err, redislock.ErrOtherSideHeld) {
			t.Fatalf("RLockWait while holding the write side = %v, %v; want ErrOtherSideHeld", ok, err)
		}
		ok, err = l.UnlockCtx(context.Background())
		rwWant(t, "Unlock, still held", ok, err, true)

		ok, err = l.RLockCtx(context.Background())
		rwWant(t, "RLock", ok, err, true)
		if ok, err := l.LockCtx(context.Background()); ok || !errors.Is(err, redislock.ErrOtherSideHeld) {
			t.Fatalf("Lock while holding a read share = %v, %v; want ErrOtherSideHeld", ok, err)
		}
		if ok, err := l.LockWaitCtx(ctx, time.Second); ok || !errors.Is(err, redislock.ErrOtherSideHeld) {
			t.Fatalf("LockWait while holding a read share = %v, %v; want ErrOtherSideHeld", ok, err)
		}
		ok, err = newRW(b, key).RLockCtx(context.Background())
		rwWant(t, "another reader (the refused Lock left no intent)", ok, err, true)
		ok, err = l.RUnlockCtx(context.Background())
		rwWant(t, "RUnlock, still held", ok, err, true)
	})
}

// TestRWLockFence: WithFencing, every write hold gets a greater token,
// shared with RedisLock's WithFencing counter; a re-entrant Lock keeps its
// token; a reader gets the latest writer's token, and 0 before any writer.
// Without it, no counter key is ever written and Fence is 0.
func TestRWLockFence(t *testing.T) {
	eachBackend(t, redistest.Start(t), func(t *testing.T, b backend, admin *redis.Client, key string) {
		checkRWNoFence(t, b, admin, key+":plain")
		checkRWFence(t, b, admin, key)
	})
}

// checkRWNoFence: RWLocks made without WithFencing, by single tries and
// waits, leave no fencing counter behind and report 0, even where a
// counter exists; admin is a client of b's deployment.
func checkRWNoFence(t *testing.T, b backend, admin redis.Cmdable, key string) {
	ctx := context.Background()
	// The counter this check has a RedisLock make below, left by an earlier
	// run on a deployment that outlives it (the cluster is shared by the
	// test binary, and -count runs the test again).
	if err := admin.Del(ctx, rwCompanion(key, "zerolock.fence")).Err(); err != nil {
		t.Fatal(err)
	}
	r, w := newRW(b, key), newRW(b, key)
	for _, s := range []struct {
		what string
		call func(context.Context) (bool, error)
		l    *redislock.RWLock
	}{
		{"Lock", w.LockCtx, w},
		{"re-entrant Lock", w.LockCtx, w},
		{"Unlock", w.UnlockCtx, nil},
		{"LockWait", func(ctx context.Context) (bool, error) { return w.LockWaitCtx(ctx, time.Second) }, w},
		{"Unlock", w.UnlockCtx, nil},
		{"RLock", r.RLockCtx, r},
		{"RUnlock", r.RUnlockCtx, nil},
	} {
		ok, err := s.call(ctx)
		rwWant(t, s.what+" without WithFencing", ok, err, true)
		if s.l != nil && s.l.Fence() != 0 {
			t.Fatalf("Fence after %s without WithFencing = %d, want 0", s.what, s.l.Fence())
		}
	}
	counter := rwCompanion(key, "zerolock.fence")
	for _, k := range []string{counter, key, rwCompanion(key, "zerolock.readers"), rwCompanion(key, "zerolock.writer-waiting")} {
		if n := admin.Exists(ctx, k).Val(); n != 0 {
			t.Fatalf("%q left by RWLocks without WithFencing after their releases", k)
		}
	}
	// A counter left by others is not read.
	plain := b.newLock(key, redislock.WithFencing())
	plain.SetExpire(30)
	mustAcquire(t, plain, true)
	mustRelease(t, plain, true)
	if n := admin.Exists(ctx, counter).Val(); n != 1 {
		t.Fatalf("no counter %q after a RedisLock WithFencing", counter)
	}
	ok, err := w.LockCtx(context.Background())
	rwWant(t, "Lock beside a counter", ok, err, true)
	if f := w.Fence(); f != 0 {
		t.Fatalf("Fence of a writer without WithFencing beside a counter = %d, want 0", f)
	}
	_, _ = w.UnlockCtx(context.Background())
	ok, err = r.RLockCtx(context.Background())
	rwWant(t, "RLock beside a counter", ok, err, true)
	if f := r.Fence(); f != 0 {
		t.Fatalf("Fence of a reader without WithFencing beside a counter = %d, want 0", f)
	}
	_, _ = r.RUnlockCtx(context.Background())
	if v := admin.Get(ctx, counter).Val(); v != "1" {
		t.Fatalf("counter = %q after RWLocks without WithFencing, want the RedisLock's 1 untouched", v)
	}
}

// checkRWFence is TestRWLockFence's WithFencing part on b; admin is a
// client of b's deployment.
func checkRWFence(t *testing.T, b backend, admin redis.Cmdable, key string) {
	// A counter left by an earlier run (see checkRWNoFence).
	if err := admin.Del(context.Background(), rwCompanion(key, "zerolock.fence")).Err(); err != nil {
		t.Fatal(err)
	}
	r, w1, w2 := newRW(b, key, redislock.WithFencing()), newRW(b, key, redislock.WithFencing()), newRW(b, key, redislock.WithFencing())
	ok, err := r.RLockCtx(context.Background())
	rwWant(t, "reader's RLock before any writer", ok, err, true)
	if f := r.Fence(); f != 0 {
		t.Fatalf("reader's Fence before any writer = %d, want 0", f)
	}
	_, _ = r.RUnlockCtx(context.Background())

	ok, err = w1.LockCtx(context.Background())
	rwWant(t, "writer 1's Lock", ok, err, true)
	f1 := w1.Fence()
	ok, err = w1.LockCtx(context.Background())
	rwWant(t, "writer 1's re-entrant Lock", ok, err, true)
	if f := w1.Fence(); f != f1 || f1 < 1 {
		t.Fatalf("writer 1's Fence %d, after its re-entrant Lock %d; want one token >= 1", f1, f)
	}
	_, _ = w1.UnlockCtx(context.Background())
	ok, err = r.RLockCtx(context.Background())
	rwWant(t, "reader's RLock after writer 1", ok, err, true)
	if f := r.Fence(); f != f1 {
		t.Fatalf("reader's Fence after writer 1 (%d) = %d", f1, f)
	}
	_, _ = r.RUnlockCtx(context.Background())

	ok, err = w2.LockCtx(context.Background())
	rwWant(t, "writer 2's Lock", ok, err, true)
	f2 := w2.Fence()
	_, _ = w2.UnlockCtx(context.Background())
	plain := b.newLock(key, redislock.WithFencing())
	plain.SetExpire(30)
	mustAcquire(t, plain, true)
	f3 := plain.Fence()
	mustRelease(t, plain, true)
	ok, err = w1.LockCtx(context.Background())
	rwWant(t, "writer 1's Lock again", ok, err, true)
	f4 := w1.Fence()
	_, _ = w1.UnlockCtx(context.Background())
	if f2 != f1+1 || f3 != f2+1 || f4 != f3+1 {
		t.Fatalf("tokens %d, %d, %d (RedisLock WithFencing), %d; want each one more", f1, f2, f3, f4)
	}
	ok, err = r.RLockCtx(context.Background())
	rwWant(t, "reader's RLock after the last writer", ok, err, true)
	if f := r.Fence(); f != f4 {
		t.Fatalf("reader's Fence after writers up to %d = %d", f4, f)
	}
	_, _ = r.RUnlockCtx(context.Background())
}

// TestRWLockWatch: a watched share and a watched write hold outlive their
// expiry; deleting them ends the Watch with ErrLockLost; the release of
// the watched side ends it with ErrReleased; Watch of an instance holding
// neither side is lost at once.
func TestRWLockWatch(t *testing.T) {
	eachBackend(t, redistest.Start(t), func(t *testing.T, b backend, admin *redis.Client, key string) {
		checkRWWatch(t, b, admin, key)
	})
}

// checkRWWatch is TestRWLockWatch on b; admin is a client of
// b's deployment.
func checkRWWatch(t *testing.T, b backend, admin redis.Cmdable, key string) {
	ctx := context.Background()
	const expiry = 300 * time.Millisecond
	short := []redislock.Option{redislock.WithExpiry(expiry), redislock.WithTolerance(0)}
	for _, c := range []struct {
		side    string
		acquire func(*redislock.RWLock, context.Context) (bool, error)
		release func(*redislock.RWLock, context.Context) (bool, error)
		loss    func() int64 // deletes the hold
	}{
		{"read", (*redislock.RWLock).RLockCtx, (*redislock.RWLock).RUnlockCtx,
			func() int64 { return admin.Del(ctx, rwCompanion(key, "zerolock.readers")).Val() }},
		{"write", (*redislock.RWLock).LockCtx, (*redislock.RWLock).UnlockCtx,
			func() int64 { return admin.Del(ctx, key).Val() }},
	} {
		l, probe := newRW(b, key, short...), newRW(b, key)
		if cause := context.Cause(l.Watch(ctx)); !errors.Is(cause, zerolock.ErrLockLost) {
			t.Fatalf("Watch of an instance holding neither side: cause %v, want ErrLockLost", cause)
		}
		ok, err := c.acquire(l, ctx)
		rwWant(t, c.side+" acquire", ok, err, true)
		lockCtx := l.Watch(ctx, zerolock.RenewEvery(expiry/5))
		start := time.Now()
		for time.Since(start) < 2*expiry {
			if ok, err := probe.LockCtx(context.Background()); ok || err != nil {
				t.Fatalf("%s: another writer's Lock beside the watched hold = %v, %v", c.side, ok, err)
			}
			time.Sleep(20 * time.Millisecond) // let the expiry pass: only renewals keep the hold
		}
		if lockCtx.Err() != nil {
			t.Fatalf("%s: Watch ended while held: %v", c.side, context.Cause(lockCtx))
		}
		ok, err = c.release(l, ctx)
		rwWant(t, c.side+" release of the watched hold", ok, err, true)
		if cause := context.Cause(lockCtx); !errors.Is(cause, zerolock.ErrReleased) {
			t.Fatalf("%s: cause after the release = %v, want ErrReleased", c.side, cause)
		}

		ok, err = c.acquire(l, ctx)
		rwWant(t, c.side+" acquire again", ok, err, true)
		lockCtx = l.Watch(ctx, zerolock.RenewEvery(expiry/5))
		if n := c.loss(); n != 1 {
			t.Fatalf("%s: deleted %d keys, want the hold's", c.side, n)
		}
		select {
		case <-lockCtx.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: Watch still running 5 s after its hold was deleted", c.side)
		}
		if cause := context.Cause(lockCtx); !errors.Is(cause, zerolock.ErrLockLost) {
			t.Fatalf("%s: cause after the hold was deleted = %v, want ErrLockLost", c.side, cause)
		}
		ok, err = c.release(l, ctx)
		rwWant(t, c.side+" release of a lost hold", ok, err, false)
	}
}

// TestRWLockRefresh: Refresh extends the side held, only while held: it
// resets a share's or the key's expiry, reports false for a hold that was
// deleted (never re-creating it) and for an instance holding nothing.
func TestRWLockRefresh(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		const expiry = 2 * time.Second
		l := newRW(b, key, redislock.WithExpiry(expiry), redislock.WithTolerance(0))
		ok, err := l.RefreshCtx(context.Background())
		rwWant(t, "Refresh of an instance that never held", ok, err, false)

		readers := rwCompanion(key, "zerolock.readers")
		ok, err = l.RLockCtx(context.Background())
		rwWant(t, "RLock", ok, err, true)
		member := admin.ZRange(ctx, readers, 0, -1).Val()
		if len(member) != 1 {
			t.Fatalf("shares %v, want one", member)
		}
		soon := rwServerMillis(t, admin) + 100
		admin.ZAdd(ctx, readers, redis.Z{Score: float64(soon), Member: member[0]})
		ok, err = l.RefreshCtx(ctx)
		rwWant(t, "RefreshCtx of a share", ok, err, true)
		left := time.Duration(int64(admin.ZScore(ctx, readers, member[0]).Val())-rwServerMillis(t, admin)) * time.Millisecond
		if left <= time.Second || left > expiry {
			t.Fatalf("share's expiry after Refresh in %v, want the %v expiry again", left, expiry)
		}
		if pttl := admin.PTTL(ctx, readers).Val(); pttl <= time.Second || pttl > expiry {
			t.Fatalf("readers' set PTTL %v after Refresh, want its share's", pttl)
		}
		admin.ZRem(ctx, readers, member[0])
		ok, err = l.RefreshCtx(ctx)
		rwWant(t, "RefreshCtx of a deleted share", ok, err, false)
		if n := admin.Exists(ctx, readers).Val(); n != 0 {
			t.Fatal("Refresh re-created a deleted share")
		}

		ok, err = l.LockCtx(context.Background())
		rwWant(t, "Lock", ok, err, true)
		admin.PExpire(ctx, key, 100*time.Millisecond)
		ok, err = l.RefreshCtx(ctx)
		rwWant(t, "RefreshCtx of the write side", ok, err, true)
		if pttl := admin.PTTL(ctx, key).Val(); pttl <= time.Second || pttl > expiry {
			t.Fatalf("key's PTTL after Refresh %v, want the %v expiry again", pttl, expiry)
		}
		ok, err = l.UnlockCtx(context.Background())
		rwWant(t, "Unlock", ok, err, true)
		ok, err = l.RefreshCtx(ctx)
		rwWant(t, "RefreshCtx after Unlock", ok, err, false)
		if n := admin.Exists(ctx, key).Val(); n != 0 {
			t.Fatal("Refresh re-created a released key")
		}
	})
}

// TestRWLockBadArguments: a negative expiry is ErrInvalidExpiry and an
// ended context its own error, for every call, and neither takes anything.
func TestRWLockBadArguments(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		bad := newRW(b, key, redislock.WithExpiry(-1*time.Second))
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		good := newRW(b, key)
		calls := []struct {
			name string
			call func(l *redislock.RWLock, ctx context.Context) (bool, error)
		}{
			{"RLockCtx", (*redislock.RWLock).RLockCtx},
			{"LockCtx", (*redislock.RWLock).LockCtx},
			{"RLockWaitCtx", func(l *redislock.RWLock, ctx context.Context) (bool, error) { return l.RLockWaitCtx(ctx, time.Second) }},
			{"LockWaitCtx", func(l *redislock.RWLock, ctx context.Context) (bool, error) { return l.LockWaitCtx(ctx, time.Second) }},
			{"RefreshCtx", (*redislock.RWLock).RefreshCtx},
		}
		for _, c := range calls {
			if ok, err := c.call(bad, context.Background()); ok || !errors.Is(err, redislock.ErrInvalidExpiry) {
				t.Errorf("%s with a negative expiry = %v, %v; want ErrInvalidExpiry", c.name, ok, err)
			}
			if ok, err := c.call(good, cancelled); ok || !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a cancelled context = %v, %v; want context.Canceled", c.name, ok, err)
			}
		}
		for _, c := range []struct {
			name string
			call func(l *redislock.RWLock, ctx context.Context) (bool, error)
		}{{"RUnlockCtx", (*redislock.RWLock).RUnlockCtx}, {"UnlockCtx", (*redislock.RWLock).UnlockCtx}} {
			if ok, err := c.call(good, cancelled); ok || !errors.Is(err, context.Canceled) {
				t.Errorf("%s with a cancelled context = %v, %v; want context.Canceled", c.name, ok, err)
			}
		}
		if cause := context.Cause(bad.Watch(context.Background())); !errors.Is(cause, redislock.ErrInvalidExpiry) {
			t.Errorf("Watch with a negative expiry: cause %v, want ErrInvalidExpiry", cause)
		}
		if keys := admin.Keys(context.Background(), "*"+key+"*").Val(); len(keys) != 0 {
			t.Errorf("keys left by refused calls: %v", keys)
		}
	})
}

// TestRWLockWakeupsPublished: Unlock and the last RUnlock announce
// themselves once, other RUnlocks do not, and WithoutWakeups never does.
func TestRWLockWakeupsPublished(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		for _, c := range []struct {
			name   string
			opts   []redislock.Option
			unlock int64 // publishes per Unlock and last RUnlock
		}{{"default", nil, 1}, {"WithoutWakeups", []redislock.Option{redislock.WithoutWakeups()}, 0}} {
			r1, r2, w := newRW(b, key, c.opts...), newRW(b, key, c.opts...), newRW(b, key, c.opts...)
			published := func(what string, wantN int64, call func(context.Context) (bool, error)) {
				t.Helper()
				before := redistest.Calls(t, admin, "spublish", "publish")
				ok, err := call(context.Background())
				rwWant(t, c.name+": "+what, ok, err, true)
				if n := redistest.Calls(t, admin, "spublish", "publish") - before; n != wantN {
					t.Errorf("%s: %s published %d times, want %d", c.name, what, n, wantN)
				}
			}
			published("Lock", 0, w.LockCtx)
			published("Unlock", c.unlock, w.UnlockCtx)
			published("RLock 1", 0, r1.RLockCtx)
			published("RLock 2", 0, r2.RLockCtx)
			published("RUnlock of one of two shares", 0, r1.RUnlockCtx)
			published("RUnlock of the last share", c.unlock, r2.RUnlockCtx)
		}
	})
}

// TestRWLockWrongType: when the key or one of its companions (the readers'
// set, the intent, the fencing counter WithFencing) holds a value of
// another type, every call that touches it fails with ErrNotRWLock naming
// WRONGTYPE and the key, writes nothing, and leaves the value alone. The
// scripts report it rather than raise it: the server answers no WRONGTYPE
// error, which go-zero's circuit breaker counts (with the errors raised,
// the breaker opened within this test and refused later calls), and
// go-zero's store keeps serving.
func TestRWLockWrongType(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, admin *redis.Client, key string) {
		ctx := context.Background()
		readers, intent := rwCompanion(key, "zerolock.readers"), rwCompanion(key, "zerolock.writer-waiting")
		counter := rwCompanion(key, "zerolock.fence")
		wantNotRWLock := func(what, wrong string, ok bool, err error) {
			t.Helper()
			if ok || !errors.Is(err, redislock.ErrNotRWLock) || !strings.Contains(err.Error(), "WRONGTYPE") ||
				!strings.Contains(err.Error(), fmt.Sprintf("%q", wrong)) {
				t.Errorf("%s with %q of another type = %v, %v; want ErrNotRWLock naming WRONGTYPE and the key", what, wrong, ok, err)
			}
		}
		for _, c := range []struct {
			name, wrong, kind string
			make              func(k string) error
			opts              []redislock.Option
		}{
			{"key", key, "zset", func(k string) error { return admin.ZAdd(ctx, k, redis.Z{Score: 1, Member: "m"}).Err() }, nil},
			{"readers", readers, "string", func(k string) error { return admin.Set(ctx, k, "v", 0).Err() }, nil},
			{"intent", intent, "hash", func(k string) error { return admin.HSet(ctx, k, "f", "v").Err() }, nil},
			{"counter", counter, "list", func(k string) error { return admin.RPush(ctx, k, "v").Err() },
				[]redislock.Option{redislock.WithFencing()}},
		} {
			if err := c.make(c.wrong); err != nil {
				t.Fatal(err)
			}
			l := newRW(b, key, c.opts...)
			for _, call := range []struct {
				what string
				call func(context.Context) (bool, error)
			}{
				{"RLock", l.RLockCtx},
				{"Lock", l.LockCtx},
				{"RLockWait", func(ctx context.Context) (bool, error) { return l.RLockWaitCtx(ctx, 100*time.Millisecond) }},
				{"LockWait", func(ctx context.Context) (bool, error) { return l.LockWaitCtx(ctx, 100*time.Millisecond) }},
			} {
				ok, err := call.call(ctx)
				wantNotRWLock(c.name+": "+call.what, c.wrong, ok, err)
			}
			switch c.name {
			case "key":
				ok, err := l.UnlockCtx(context.Background())
				wantNotRWLock("Unlock", c.wrong, ok, err)
			case "readers":
				ok, err := l.RUnlockCtx(context.Background())
				wantNotRWLock("RUnlock", c.wrong, ok, err)
			}
			if kind := admin.Type(ctx, c.wrong).Val(); kind != c.kind {
				t.Errorf("%s: %q holds a %s after the calls, want its %s left alone", c.name, c.wrong, kind, c.kind)
			}
			for _, k := range []string{key, readers, intent, counter} {
				if n := admin.Exists(ctx, k).Val(); k != c.wrong && n != 0 {
					t.Errorf("%s: the refused calls wrote %q", c.name, k)
				}
			}
			admin.Del(ctx, c.wrong)
		}

		// A share whose set was replaced: its renewal and release report it.
		l := newRW(b, key)
		ok, err := l.RLockCtx(context.Background())
		rwWant(t, "RLock", ok, err, true)
		admin.Del(ctx, readers)
		admin.Set(ctx, readers, "v", 0)
		ok, err = l.RefreshCtx(context.Background())
		wantNotRWLock("Refresh of a share", readers, ok, err)
		ok, err = l.RUnlockCtx(context.Background())
		wantNotRWLock("RUnlock of a share", readers, ok, err)
		admin.Del(ctx, readers)

		// A script's own WRONGTYPE, caught by its pcall, counts in INFO
		// errorstats; what go-zero's breaker counts is the script's reply.
		if failed := scriptReplyErrors(t, admin); failed != 0 {
			t.Errorf("%d scripts answered with an error reply, which go-zero's breaker counts:\n%s", failed, admin.Info(ctx, "commandstats", "errorstats").Val())
		}
		for i := range 5 { // go-zero's breaker still lets calls through
			ok, err := l.LockCtx(context.Background())
			rwWant(t, fmt.Sprintf("Lock %d after the reports", i), ok, err, true)
			ok, err = l.UnlockCtx(context.Background())
			rwWant(t, fmt.Sprintf("Unlock %d after the reports", i), ok, err, true)
		}
	})
}

// TestRWLockWaitErrorsNamed: a wait that ends with its context names the
// side it waited for and the key, as the single tries do.
func TestRWLockWaitErrorsNamed(t *testing.T) {
	eachBackend(t, redistest.Start(t), func(t *testing.T, b backend, _ *redis.Client, key string) {
		holder, waiter := newRW(b, key), newRW(b, key)
		ok, err := holder.LockCtx(context.Background())
		rwWant(t, "Lock", ok, err, true)
		for _, c := range []struct {
			op   string
			wait func(context.Context, time.Duration) (bool, error)
		}{{"rlock", waiter.RLockWaitCtx}, {"lock", waiter.LockWaitCtx}} {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			ok, err := c.wait(ctx, 0)
			cancel()
			want := fmt.Sprintf("redislock: %s %q: ", c.op, key)
			if ok || !errors.Is(err, context.DeadlineExceeded) || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("%s wait past its context = %v, %v; want context.DeadlineExceeded named %q", c.op, ok, err, want)
			}
		}
		ok, err = holder.UnlockCtx(context.Background())
		rwWant(t, "Unlock", ok, err, true)
	})
}

// TestRWLockRing: on a go-redis Ring of two servers, which routes a script
// by its first key and places a key by its hash tag, the readers' set and
// intent of a key with '}' (whose companions carry a substitute tag, see
// slot.Companion) stay on the lock key's shard: RLock, Refresh and RUnlock
// of a share, and a waiting writer's intent and its deletion, all run
// there. Some of the keys have companions that the Ring itself places on
// the other shard, where RUnlock found nothing before the scripts were
// routed by the lock key.
func TestRWLockRing(t *testing.T) {
	a, b := redistest.Start(t), redistest.Start(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": a.Addr(), "b": b.Addr()}})
	t.Cleanup(func() { _ = ring.Close() })
	shards := []*redis.Client{a.Client(t), b.Client(t)}
	ctx := context.Background()
	companion := func(key, suffix string) string {
		return strings.Replace(redislock.ReleaseChannel(key), "zerolock.released", suffix, 1)
	}
	exists := func(k string) (on []int) {
		for i, s := range shards {
			if s.Exists(ctx, k).Val() == 1 {
				on = append(on, i)
			}
		}
		return on
	}
	var elsewhere int
	for i := range 12 {
		key := fmt.Sprintf("zerolock-test:ring}%d", i)
		readers, intent := companion(key, "zerolock.readers"), companion(key, "zerolock.writer-waiting")
		reader, probe := redislock.NewRWLock(ring, key, redislock.WithExpiry(30*time.Second)), redislock.NewRWLock(ring, key)
		writer := redislock.NewRWLock(ring, key, redislock.WithExpiry(30*time.Second))
		ok, err := reader.RLockCtx(context.Background())
		rwWant(t, key+": RLock", ok, err, true)
		if on := exists(readers); len(on) != 1 {
			t.Fatalf("%s: the readers' set %q is on shards %v, want one", key, readers, on)
		}
		if ring.Exists(ctx, readers).Val() == 0 {
			elsewhere++ // the Ring places the set itself on the other shard
		}
		ok, err = reader.RefreshCtx(context.Background())
		rwWant(t, key+": Refresh of the share", ok, err, true)

		waitCtx, cancel := context.WithCancel(ctx)
		wrote := rwInBackground(func() (bool, error) { return writer.LockWaitCtx(waitCtx, 0) })
		rwWaitFor(t, key+": the writer's intent holds readers back", func() bool {
			ok, err := probe.RLockCtx(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				_, _ = probe.RUnlockCtx(context.Background())
			}
			return !ok
		})
		cancel()
		if r := <-wrote; r.ok || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("%s: cancelled LockWaitCtx = %v, %v; want false and context.Canceled", key, r.ok, r.err)
		}
		if on := exists(intent); len(on) != 0 {
			t.Fatalf("%s: the intent outlived the writer's wait, on shards %v", key, on)
		}

		ok, err = reader.RUnlockCtx(context.Background())
		rwWant(t, key+": RUnlock of the share", ok, err, true)
		if on := exists(readers); len(on) != 0 {
			t.Fatalf("%s: the readers' set outlived its last share, on shards %v", key, on)
		}
		ok, err = writer.LockCtx(context.Background())
		rwWant(t, key+": Lock after the reader left", ok, err, true)
		ok, err = writer.UnlockCtx(context.Background())
		rwWant(t, key+": Unlock", ok, err, true)
	}
	if elsewhere == 0 {
		t.Fatal("no key has a readers' set the Ring would place on the other shard: nothing was checked")
	}
	t.Logf("%d of 12 keys have companions the Ring places on the other shard", elsewhere)
}

// TestRWLockBesideRedisLock: a RedisLock on the same key excludes writers
// and new readers while it holds the key.
func TestRWLockBesideRedisLock(t *testing.T) {
	srv := redistest.Start(t)
	eachBackend(t, srv, func(t *testing.T, b backend, _ *redis.Client, key string) {
		plain := b.newLock(key)
		plain.SetExpire(30)
		mustAcquire(t, plain, true)
		l := newRW(b, key)
		ok, err := l.LockCtx(context.Background())
		rwWant(t, "Lock while a RedisLock holds the key", ok, err, false)
		ok, err = l.RLockCtx(context.Background())
		rwWant(t, "RLock while a RedisLock holds the key", ok, err, false)
		mustRelease(t, plain, true)
		ok, err = l.LockCtx(context.Background())
		rwWant(t, "Lock after the RedisLock released", ok, err, true)
		mustAcquire(t, plain, false)
		_, _ = l.UnlockCtx(context.Background())
	})
}

// rwChildEnv names the side a re-executed test binary holds for
// TestRWLockKilledHolder.
const rwChildEnv = "ZEROLOCK_RWLOCK_CHILD"

// TestRWLockChildHolder is the child process of TestRWLockKilledHolder:
// it takes a side (env ZEROLOCK_RWLOCK_CHILD: read or write) of KEY on
// REDIS_ADDR through go-zero's store or go-redis (STORE) with a 1 s
// expiry, watched when WATCH=1, prints "held", and waits to be killed.
// As "wait" (for TestRWLockKilledWaitingWriter) it prints "waiting" and
// waits for the write side (30 s expiry) until killed.
// Run by itself it skips.
func TestRWLockChildHolder(t *testing.T) {
	s := os.Getenv(rwChildEnv)
	if s == "" {
		t.Skip("the child process of TestRWLockKilledHolder")
	}
	var store redislock.Store
	if os.Getenv("STORE") == "go-zero" {
		store = redislock.GoZeroStore(zredis.MustNewRedis(zredis.RedisConf{
			Host: os.Getenv("REDIS_ADDR"), Type: zredis.NodeType, DisableIdentity: true}))
	} else {
		store = redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR")})
	}
	if s == "wait" {
		l := redislock.NewRWLock(store, os.Getenv("KEY"), redislock.WithExpiry(30*time.Second))
		fmt.Println("waiting")
		_, _ = l.LockWaitCtx(context.Background(), 0) // until killed
		os.Exit(1)
	}
	l := redislock.NewRWLock(store, os.Getenv("KEY"), redislock.WithExpiry(time.Second), redislock.WithTolerance(0))
	acquire := l.LockCtx
	if s == "read" {
		acquire = l.RLockCtx
	}
	if ok, err := acquire(context.Background()); !ok || err != nil {
		fmt.Printf("failed %v %v\n", ok, err)
		os.Exit(1)
	}
	if os.Getenv("WATCH") == "1" {
		l.Watch(context.Background(), zerolock.RenewEvery(200*time.Millisecond))
	}
	fmt.Println("held")
	select {} // until killed
}

// TestRWLockKilledHolder: a child process holding a read share (watched,
// on go-zero's store) or the write side (on go-redis) is SIGKILLed; its
// hold expires on its own. A writer waiting behind the dead reader (with a
// 5-10 s back-off: only the share's expiry, which refusals report, brings
// it back) and a reader polling behind the dead writer get the lock after
// the hold's expiry, never before.
func TestRWLockKilledHolder(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	client := srv.Client(t)
	for _, c := range []struct {
		side, store, watch string
	}{{"read", "go-zero", "1"}, {"write", "go-redis", "0"}} {
		t.Run(c.side, func(t *testing.T) {
			key := "zerolock-test:" + t.Name()
			p := startRWChild(t, "held", rwChildEnv+"="+c.side, "REDIS_ADDR="+srv.Addr(),
				"KEY="+key, "STORE="+c.store, "WATCH="+c.watch)
			if c.watch == "1" {
				time.Sleep(1500 * time.Millisecond) // past the first expiry: only renewals keep the share
			}
			p.Kill()
			now := rwServerMillis(t, admin)
			local := time.Now()
			var expires int64 // server ms
			if c.side == "read" {
				shares := admin.ZRangeWithScores(ctx, rwCompanion(key, "zerolock.readers"), 0, -1).Val()
				if len(shares) != 1 {
					t.Fatalf("shares at the kill: %v, want the child's", shares)
				}
				expires = int64(shares[0].Score)
			} else {
				expires = now + admin.PTTL(ctx, key).Val().Milliseconds()
			}
			if expires <= now {
				t.Fatalf("the child's %s hold was gone at the kill", c.side)
			}
			expiresAt := local.Add(time.Duration(expires-now) * time.Millisecond)
			var got time.Time
			if c.side == "read" {
				writer := redislock.NewRWLock(client, key, redislock.WithExpiry(30*time.Second), rwSlowBackoff)
				ok, err := writer.LockWaitCtx(ctx, 10*time.Second)
				rwWant(t, "LockWaitCtx behind the dead reader", ok, err, true)
				got = time.Now()
				_, _ = writer.UnlockCtx(context.Background())
			} else {
				reader := redislock.NewRWLock(redislock.GoZeroStore(newGoZeroStore(t, srv)), key, redislock.WithExpiry(30*time.Second))
				rwWaitFor(t, "a reader got in behind the dead writer", func() bool {
					ok, err := reader.RLockCtx(context.Background())
					if err != nil {
						t.Fatal(err)
					}
					got = time.Now()
					return ok
				})
				_, _ = reader.RUnlockCtx(context.Background())
			}
			if got.Before(expiresAt.Add(-5 * time.Millisecond)) {
				t.Fatalf("the %s side was taken %v before the dead holder's expiry", c.side, expiresAt.Sub(got))
			}
			t.Logf("dead %s holder: the lock was taken %v after its hold expired", c.side, got.Sub(expiresAt).Round(time.Millisecond))
		})
	}
}

// startRWChild starts TestRWLockChildHolder with env and waits until it
// prints want.
func startRWChild(t *testing.T, want string, env ...string) *testproc.Process {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestRWLockChildHolder$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p, err := testproc.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != want {
		t.Fatalf("child process: %q, want %q", lines.Text(), want)
	}
	return p
}

// TestRWLockKilledWaitingWriter: a child process waiting for the write
// side (30 s expiry, default back-off) behind a reader is SIGKILLed. Its
// intent, which holds new readers back, lives at most a second, not the
// 30 s of the hold it waited for, and readers get in once it expired.
func TestRWLockKilledWaitingWriter(t *testing.T) {
	srv := redistest.Start(t)
	admin := srv.Client(t)
	ctx := context.Background()
	key := "zerolock-test:" + t.Name()
	b := backends(t, srv)[1] // go-redis
	holder, probe := newRW(b, key), newRW(b, key)
	ok, err := holder.RLockCtx(context.Background())
	rwWant(t, "reader's RLock", ok, err, true)
	p := startRWChild(t, "waiting", rwChildEnv+"=wait", "REDIS_ADDR="+srv.Addr(), "KEY="+key)
	rwWaitFor(t, "the waiting writer's intent holds readers back", func() bool {
		ok, err := probe.RLockCtx(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			_, _ = probe.RUnlockCtx(context.Background())
		}
		return !ok
	})
	p.Kill()
	// asked is taken before PTTL is sent, so it is no later than the
	// server's clock when it computed the PTTL: the intent expires no
	// earlier than asked+intent however long the reply takes to arrive (a
	// stamp taken after the reply let a loaded CI machine see a reader get
	// in 976 ms after it, with an intent of 981 ms).
	asked := time.Now()
	intent := admin.PTTL(ctx, rwCompanion(key, "zerolock.writer-waiting")).Val()
	if intent <= 0 || intent > time.Second {
		t.Fatalf("the dead writer's intent has PTTL %v, want in (0, 1s]", intent)
	}
	rwWaitFor(t, "a reader got in after the dead writer's intent expired", func() bool {
		ok, err := probe.RLockCtx(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return ok
	})
	// PTTL truncates to the millisecond; 2 ms covers that and the
	// server's own rounding of the expiry.
	if d := time.Since(asked); d < intent-2*time.Millisecond {
		t.Fatalf("a reader got in %v after the intent's PTTL was asked, before its %v ran out", d, intent)
	}
	t.Logf("readers held back %v after the waiting writer was killed (intent PTTL %v at the kill)",
		time.Since(asked).Round(time.Millisecond), intent)
	for _, l := range []*redislock.RWLock{holder, probe} {
		ok, err := l.RUnlockCtx(context.Background())
		rwWant(t, "RUnlock", ok, err, true)
	}
}

// BenchmarkRWLockCycle measures a read cycle (RLock + RUnlock) and a write
// cycle (Lock + Unlock) on a real redis-server through each store: two
// scripts, two round trips, per cycle, the floor of any lock whose
// acquire checks more than one key. Run it with -benchmem to see
// allocations per cycle.
func BenchmarkRWLockCycle(b *testing.B) {
	srv := redistest.Start(b)
	zstore := zredis.MustNewRedis(zredis.RedisConf{
		Host: srv.Addr(), Type: zredis.NodeType, NonBlock: true, DisableIdentity: true,
	})
	ctx := context.Background()
	for _, s := range []struct {
		name  string
		store redislock.Store
	}{{"go-redis", srv.Client(b)}, {"go-zero", redislock.GoZeroStore(zstore)}} {
		l := redislock.NewRWLock(s.store, "bench:rwlock:"+s.name, redislock.WithExpiry(5*time.Second))
		for _, c := range []struct {
			side             string
			acquire, release func(context.Context) (bool, error)
		}{{"read", l.RLockCtx, l.RUnlockCtx}, {"write", l.LockCtx, l.UnlockCtx}} {
			b.Run(s.name+"/"+c.side, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if ok, err := c.acquire(ctx); !ok || err != nil {
						b.Fatalf("%s acquire = %v, %v", c.side, ok, err)
					}
					if ok, err := c.release(ctx); !ok || err != nil {
						b.Fatalf("%s release = %v, %v", c.side, ok, err)
					}
				}
			})
		}
	}
}

// scriptReplyErrors is how many EVAL and EVALSHA calls the server has
// answered with an error reply other than NOSCRIPT (INFO commandstats'
// failed_calls, less errorstats' NOSCRIPT count: go-redis's EVALSHA gets
// one per script before it sends EVAL).
func scriptReplyErrors(t *testing.T, admin *redis.Client) int64 {
	t.Helper()
	var failed int64
	for _, line := range strings.Split(admin.Info(context.Background(), "commandstats", "errorstats").Val(), "\n") {
		name, stats, _ := strings.Cut(strings.TrimSpace(line), ":")
		field, sign := "failed_calls=", int64(1)
		switch name {
		case "cmdstat_eval", "cmdstat_evalsha":
		case "errorstat_NOSCRIPT":
			field, sign = "count=", -1
		default:
			continue
		}
		for _, f := range strings.Split(stats, ",") {
			if v, ok := strings.CutPrefix(f, field); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				failed += sign * n
			}
		}
	}
	return failed
}
