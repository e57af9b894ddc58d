package main

import (
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/zerolock/zerolock/internal/redistest"
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
