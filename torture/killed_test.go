package torture

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// TestHolderKilled: a child process holds a 2 s lock (with and without the
// watchdog) and is SIGKILLed. Another process gets the lock within the
// remaining TTL + 250 ms, and never before the TTL ran out.
func TestHolderKilled(t *testing.T) {
	srv := redistest.Start(t)
	client := srv.Client(t)
	trials := 1
	if long() {
		trials = 5
	}
	var worst time.Duration
	for _, watch := range []string{"0", "1"} {
		for trial := 0; trial < trials; trial++ {
			key := fmt.Sprintf("torture:killed:%s:%d", watch, trial)
			cmd, out, err := child("holder", "REDIS_ADDR="+srv.Addr(), "KEY="+key, "WATCH="+watch)
			if err != nil {
				t.Fatal(err)
			}
			if !out.Scan() || out.Text() != "held" {
				t.Fatalf("child did not take the lock: %q", out.Text())
			}
			if watch == "1" {
				time.Sleep(2500 * time.Millisecond) // past the first expiry: only renewals keep it
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			killed := time.Now()
			ttl := client.PTTL(context.Background(), key).Val()
			if ttl <= 0 {
				t.Fatalf("watch=%s: the lock was gone at the kill (PTTL %v)", watch, ttl)
			}
			expires := killed.Add(ttl)
			lock := redislock.New(client, key)
			lock.SetExpire(5)
			for {
				ok, err := lock.Acquire()
				if err != nil {
					t.Fatal(err)
				}
				now := time.Now()
				if ok {
					if now.Before(expires.Add(-5 * time.Millisecond)) {
						t.Fatalf("watch=%s: acquired %v before the dead holder's TTL ran out", watch, expires.Sub(now))
					}
					if late := now.Sub(expires); late > worst {
						worst = late
					}
					if now.After(expires.Add(250 * time.Millisecond)) {
						t.Fatalf("watch=%s: acquired %v after the TTL ran out, more than 250ms", watch, now.Sub(expires))
					}
					break
				}
				if now.After(expires.Add(time.Second)) {
					t.Fatalf("watch=%s: never acquired", watch)
				}
				time.Sleep(5 * time.Millisecond)
			}
			_, _ = lock.Release()
		}
	}
	record(t, fmt.Sprintf("2 s lock, SIGKILL, %d trials with and %d without watchdog", trials, trials),
		fmt.Sprintf("another process acquired at most %v after the TTL ran out, never before", worst.Round(time.Millisecond)))
}
