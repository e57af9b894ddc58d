package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func login(t *testing.T, base, user string) string {
	t.Helper()
	resp, err := http.Post(base+"/login", "application/json", strings.NewReader(`{"userId":"`+user+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Token string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Token == "" {
		t.Fatalf("login answered %d without a token: %v", resp.StatusCode, err)
	}
	return body.Token
}

func createOrder(t *testing.T, base, token, orderID string) (int, int64, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/orders", strings.NewReader(`{"orderId":"`+orderID+`","amount":5}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, 0, ""
	}
	defer resp.Body.Close()
	var body struct{ Times int64 }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Times, resp.Header.Get("Retry-After")
}

// TestDoubleClickedOrderRunsOnce: 20 concurrent submissions of one order by
// one user through the configured middleware run the logic once; the rest
// get 409 with Retry-After. Another user's same order id is not blocked.
func TestDoubleClickedOrderRunsOnce(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	c := loadConfig(t)
	c.OrderHold = 300 * time.Millisecond
	base, _ := startServer(t, c)
	alice, bob := login(t, base, "alice"), login(t, base, "bob")

	var (
		mu    sync.Mutex
		codes = map[int]int{}
		wg    sync.WaitGroup
	)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, retry := createOrder(t, base, alice, "o-1")
			if code == http.StatusConflict && retry == "" {
				t.Error("409 without Retry-After")
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusOK] != 1 || codes[http.StatusConflict] != 19 {
		t.Fatalf("status codes %v, want one 200 and nineteen 409", codes)
	}
	if code, times, _ := createOrder(t, base, bob, "o-1"); code != http.StatusOK || times != 1 {
		t.Fatalf("bob's o-1: %d, times %d; want 200, 1", code, times)
	}
	// Inflight mode: a later resubmission runs (idempotency of the business
	// itself is the logic's concern), and the count shows alice's first
	// order ran exactly once before it.
	if code, times, _ := createOrder(t, base, alice, "o-1"); code != http.StatusOK || times != 2 {
		t.Fatalf("alice's resubmission: %d, times %d; want 200, 2", code, times)
	}
	if code, _, _ := createOrder(t, base, "not-a-token", "o-2"); code != http.StatusUnauthorized {
		t.Fatalf("order without a valid token: %d, want 401", code)
	}
}

func redeem(t *testing.T, base, code string) int {
	t.Helper()
	resp, err := http.Post(base+"/coupons/"+code+"/redeem", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestCouponWindow: the window-mode rule refuses a sequential repeat.
func TestCouponWindow(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	c := loadConfig(t)
	base, _ := startServer(t, c)
	if got := redeem(t, base, "WELCOME"); got != http.StatusOK {
		t.Fatalf("first redemption: %d", got)
	}
	if got := redeem(t, base, "WELCOME"); got != http.StatusConflict {
		t.Fatalf("repeat inside the 10s window: %d, want 409", got)
	}
	if got := redeem(t, base, "SPRING"); got != http.StatusOK {
		t.Fatalf("another code: %d, want 200", got)
	}
}

// TestCouponWindowEnds drives the README's coupon scenario on the embedded
// default: the first redemption 200, a repeat 409, and once the window has
// passed a redemption 200 again, because the embedded miniredis's keys
// expire in real time. Only the window is shortened, from etc/api.yaml's
// 10 s to 1 s, to keep the test short.
func TestCouponWindowEnds(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	c := loadConfig(t)
	const window = time.Second
	shortened := false
	for i, rule := range c.Lock.Rules {
		if rule.Path == "/coupons/:code/redeem" {
			if rule.Mode != "window" {
				t.Fatalf("etc/api.yaml's coupon rule is in mode %q, want window", rule.Mode)
			}
			c.Lock.Rules[i].Expire = window
			shortened = true
		}
	}
	if !shortened {
		t.Fatal("etc/api.yaml has no rule for /coupons/:code/redeem")
	}
	base, _ := startServer(t, c)

	start := time.Now()
	if got := redeem(t, base, "WELCOME"); got != http.StatusOK {
		t.Fatalf("first redemption: %d, want 200", got)
	}
	if got := redeem(t, base, "WELCOME"); got != http.StatusConflict {
		t.Fatalf("repeat inside the window: %d, want 409", got)
	}
	deadline := start.Add(window + 5*time.Second)
	for {
		got := redeem(t, base, "WELCOME")
		if got == http.StatusOK {
			break
		}
		if got != http.StatusConflict {
			t.Fatalf("redemption while waiting for the window to end: %d, want 409 or 200", got)
		}
		if time.Now().After(deadline) {
			t.Fatalf("still 409 %v after the first redemption, with a %v window", time.Since(start), window)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The embedded clock may end a window up to one 50 ms tick early.
	if took := time.Since(start); took < window-100*time.Millisecond {
		t.Fatalf("window ended after %v, want about %v", took, window)
	}
}
