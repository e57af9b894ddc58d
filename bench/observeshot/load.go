package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// stallFor is how long Redis stalls once during the load.
const stallFor = 3 * time.Second

// loadStats counts the answers the load got, by route and status.
type loadStats struct {
	mu      sync.Mutex
	counts  map[string]int // "POST /orders 409" -> answers
	deleted atomic.Int64   // report locks deleted under their holder
}

func (s *loadStats) add(route string, status int) {
	s.mu.Lock()
	s.counts[route+" "+strconv.Itoa(status)]++
	s.mu.Unlock()
}

// String lists the answers, one route and status a line.
func (s *loadStats) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := make([]string, 0, len(s.counts)+1)
	for k, n := range s.counts {
		lines = append(lines, fmt.Sprintf("  %-36s %5d", k, n))
	}
	sort.Strings(lines)
	lines = append(lines, fmt.Sprintf("  %-36s %5d", "report locks deleted under a holder", s.deleted.Load()))
	return "answers:\n" + strings.Join(lines, "\n")
}

// total is the number of answers.
func (s *loadStats) total() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int
	for _, c := range s.counts {
		n += c
	}
	return n
}

// loadClient sends the demo's requests.
type loadClient struct {
	base  string
	http  *http.Client
	stats *loadStats
}

// send sends one request and counts its answer under route; a transport
// error counts as status 0.
func (c *loadClient) send(ctx context.Context, method, path, route, token string, header map[string]string, body any) (int, []byte) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.stats.add(route, 0)
		return 0, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	c.stats.add(route, resp.StatusCode)
	return resp.StatusCode, data
}

// drive sends example/api a mix of requests for d, from several
// goroutines, each pacing itself, so every lock metric moves:
//
//   - double-clicked orders (two identical POST /orders at once: one
//     acquires the middleware's lock, the other is refused, 409);
//   - deductions of one item from three clients (the logic's try-lock: one
//     at a time, the others busy, 409);
//   - three exports at once per user (limit mode, two permits: 429);
//   - payments retried with their Idempotency-Key (replayed), and now and
//     then with another amount (mismatch, 422);
//   - one coupon redeemed again and again (window mode: one per 10 s);
//   - three clients rebuilding one report (they queue on its lock, for up
//     to 10 s: about one rebuild's 3 s or two);
//   - rebuilds of another report whose lock is deleted under its holder
//     every 5 s, as an eviction or a failover that lost the write would (the
//     watchdog reports it lost, the release finds it gone);
//   - once, at 60% of the load, Redis stalls for 3 s (stall, then resume:
//     a hung server), longer than a report lock's validity (its 2 s expiry
//     and the default tolerance, less a margin), so its watchdog gives the
//     hold up (renew_failed).
//
// It returns once every request sent has been answered.
func drive(ctx context.Context, base, redisAddr string, d time.Duration, stall, resume func()) (*loadStats, error) {
	stats := &loadStats{counts: map[string]int{}}
	c := &loadClient{base: base, stats: stats,
		http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	users := []string{"alice", "bob", "carol"}
	tokens := map[string]string{}
	for _, u := range users {
		status, body := c.send(ctx, http.MethodPost, "/login", "POST /login", "", nil, map[string]string{"userId": u})
		var resp struct{ Token string }
		if status != http.StatusOK || json.Unmarshal(body, &resp) != nil || resp.Token == "" {
			return nil, fmt.Errorf("login %s: status %d: %s", u, status, body)
		}
		tokens[u] = resp.Token
	}
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()

	loadCtx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	// Requests run on ctx, so those under way when the load ends finish.
	var wg sync.WaitGroup
	every := func(pause time.Duration, work func(i int)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; loadCtx.Err() == nil; i++ {
				work(i)
				select {
				case <-loadCtx.Done():
				case <-time.After(pause):
				}
			}
		}()
	}
	together := func(n int, work func(k int)) {
		var g sync.WaitGroup
		for k := 0; k < n; k++ {
			g.Add(1)
			go func() { defer g.Done(); work(k) }()
		}
		g.Wait()
	}

	for _, u := range users {
		every(300*time.Millisecond, func(i int) { // a double-click
			order := map[string]any{"orderId": fmt.Sprintf("%s-%d", u, i), "amount": 1200}
			together(2, func(int) { c.send(ctx, http.MethodPost, "/orders", "POST /orders", tokens[u], nil, order) })
		})
		every(300*time.Millisecond, func(int) { // three exports at once
			together(3, func(int) { c.send(ctx, http.MethodGet, "/exports", "GET /exports", tokens[u], nil, nil) })
		})
		every(250*time.Millisecond, func(i int) { // a payment and its retries
			key := map[string]string{"Idempotency-Key": fmt.Sprintf("pay-%s-%d", u, i)}
			pay := map[string]any{"amount": 500}
			c.send(ctx, http.MethodPost, "/payments", "POST /payments", tokens[u], key, pay)
			c.send(ctx, http.MethodPost, "/payments", "POST /payments", tokens[u], key, pay)
			if i%4 == 0 {
				c.send(ctx, http.MethodPost, "/payments", "POST /payments", tokens[u], key, map[string]any{"amount": 700})
			}
		})
	}
	for range 3 {
		every(200*time.Millisecond, func(int) {
			c.send(ctx, http.MethodPost, "/stock/sku-1/deduct", "POST /stock/:sku/deduct", "", nil, map[string]any{"count": 1})
		})
	}
	every(500*time.Millisecond, func(int) {
		c.send(ctx, http.MethodPost, "/coupons/SPRING/redeem", "POST /coupons/:code/redeem", "", nil, nil)
	})
	for range 3 {
		every(100*time.Millisecond, func(int) {
			c.send(ctx, http.MethodPost, "/reports/q1/rebuild", "POST /reports/:id/rebuild", "", nil, nil)
		})
	}
	every(100*time.Millisecond, func(int) {
		c.send(ctx, http.MethodPost, "/reports/q2/rebuild", "POST /reports/:id/rebuild", "", nil, nil)
	})
	every(5*time.Second, func(i int) {
		if i == 0 {
			return // the first rebuild runs undisturbed
		}
		if n, err := rdb.Del(ctx, "demo:lock:report:q2").Result(); err == nil && n == 1 {
			stats.deleted.Add(1)
		}
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-loadCtx.Done():
			return
		case <-time.After(d * 6 / 10):
		}
		stall()
		time.Sleep(stallFor) // the stall itself, not a wait for another goroutine
		resume()
	}()
	wg.Wait()
	if stats.total() == 0 {
		return nil, fmt.Errorf("the load got no answer")
	}
	return stats, nil
}
