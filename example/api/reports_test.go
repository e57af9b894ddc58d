package main

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/example/api/internal/svc"
	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// TestRebuildsQueueAndFence: three concurrent rebuilds of one report wait
// for each other instead of failing, and write with increasing tokens.
func TestRebuildsQueueAndFence(t *testing.T) {
	srv := redistest.Start(t)
	t.Setenv("ZEROLOCK_REDIS_HOST", srv.Addr())
	c := loadConfig(t)
	c.RebuildTime = 200 * time.Millisecond
	base, sc := startServer(t, c)

	var (
		mu     sync.Mutex
		fences []int64
		wg     sync.WaitGroup
	)
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(base+"/reports/q3/rebuild", "application/json", nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var body struct{ Fence int64 }
			if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&body) != nil {
				t.Errorf("rebuild answered %d", resp.StatusCode)
				return
			}
			mu.Lock()
			fences = append(fences, body.Fence)
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(fences) != 3 {
		t.Fatalf("%d rebuilds succeeded, want all 3 (they wait for each other)", len(fences))
	}
	seen := map[int64]bool{}
	var max int64
	for _, f := range fences {
		if seen[f] || f <= 0 {
			t.Fatalf("fences %v are not distinct positive tokens", fences)
		}
		seen[f] = true
		if f > max {
			max = f
		}
	}
	if _, fence, _ := sc.Reports.Get("q3"); fence != max {
		t.Fatalf("stored report written by fence %d, want the newest %d", fence, max)
	}
}

// TestRebuildRenewsItsLock runs one rebuild with etc/api.yaml as it is, on
// the embedded default. It answers 200 although it works longer than
// go-zero's default 3 s request timeout (its route has its own) and longer
// than the expiry its lock was taken with: while it works, the lock's PTTL
// goes back up (the watchdog renews it) and the key outlives that first
// expiry.
func TestRebuildRenewsItsLock(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	c := loadConfig(t)
	base, sc := startServer(t, c)
	client := redis.NewClient(&redis.Options{Addr: sc.Config.Redis.Host})
	t.Cleanup(func() { _ = client.Close() })

	type answer struct {
		status int
		fence  int64
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.Post(base+"/reports/q4/rebuild", "application/json", nil)
		if err != nil {
			t.Error(err)
			answered <- answer{}
			return
		}
		defer resp.Body.Close()
		var body struct{ Fence int64 }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		answered <- answer{resp.StatusCode, body.Fence}
	}()

	var (
		firstSeen, lastSeen time.Time
		firstTTL, prevTTL   time.Duration
		renewed             bool
		got                 answer
	)
	deadline := time.Now().Add(c.RebuildTime + 10*time.Second)
poll:
	for {
		select {
		case got = <-answered:
			break poll
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer to the rebuild")
		}
		ttl, err := client.PTTL(context.Background(), svc.ReportLockKey("q4")).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl > 0 {
			now := time.Now()
			if firstSeen.IsZero() {
				firstSeen, firstTTL = now, ttl
			} else if ttl > prevTTL {
				renewed = true
			}
			lastSeen, prevTTL = now, ttl
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got.status != http.StatusOK || got.fence <= 0 {
		t.Fatalf("rebuild answered %d with fence %d, want 200 and a token", got.status, got.fence)
	}
	if firstSeen.IsZero() {
		t.Fatal("the rebuild's lock was never seen")
	}
	if !renewed {
		t.Fatal("the lock's PTTL never went back up while the rebuild ran: no renewal")
	}
	if held := lastSeen.Sub(firstSeen); held <= firstTTL {
		t.Fatalf("lock seen for %v, not past the %v it was taken with", held, firstTTL)
	}
}
