package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zerolock/zerolock/example/api/internal/svc"
)

// exportsAnswer is the answer to GET /exports.
type exportsAnswer struct {
	status     int
	retryAfter string
	code       string // of an error answer
}

// exportOrders sends GET /exports with token on ctx. A request cancelled
// by ctx answers the zero exportsAnswer.
func exportOrders(ctx context.Context, t *testing.T, base, token string) exportsAnswer {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/exports", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
		return exportsAnswer{}
	}
	defer resp.Body.Close()
	var body struct{ Code string }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return exportsAnswer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), code: body.Code}
}

// waitPermits waits until the users' export semaphores hold want permits
// (one count per user that holds any, in any order).
func waitPermits(t *testing.T, sc *svc.ServiceContext, want ...int64) {
	t.Helper()
	slices.Sort(want)
	var got []int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		keys, err := sc.Redis.Keys("zerolock:http:GET:/exports:*")
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, k := range keys {
			if n, err := sc.Redis.Zcard(k); err == nil && n > 0 {
				got = append(got, int64(n))
			}
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			return
		}
	}
	t.Fatalf("export permits held %v, want %v", got, want)
}

// TestExportsLimitedPerUser: with etc/api.yaml's rule (limit mode, two
// permits per user), two concurrent exports of one user run, a third gets
// 429 with Retry-After, another user's export runs meanwhile, and when one
// export ends (its client leaves) a new one of the same user runs.
func TestExportsLimitedPerUser(t *testing.T) {
	t.Setenv("ZEROLOCK_REDIS_HOST", "")
	c := loadConfig(t)
	c.ExportHold = time.Minute // the exports run until their clients leave
	c.Timeout = 0              // and go-zero's timeout does not end them first
	base, sc := startServer(t, c)
	alice, bob := login(t, base, "alice"), login(t, base, "bob")

	ctx, cancelAll := context.WithCancel(context.Background())
	defer cancelAll()
	first, cancelFirst := context.WithCancel(ctx)
	done := make(chan exportsAnswer, 4)
	go func() { done <- exportOrders(first, t, base, alice) }()
	go func() { done <- exportOrders(ctx, t, base, alice) }()
	waitPermits(t, sc, 2)

	third := exportOrders(context.Background(), t, base, alice)
	if secs, err := strconv.Atoi(third.retryAfter); third.status != http.StatusTooManyRequests ||
		third.code != "limit_exceeded" || err != nil || secs < 1 || secs > 5 {
		t.Fatalf("alice's third export: %+v, want 429 limit_exceeded with a Retry-After of 1..5", third)
	}

	go func() { done <- exportOrders(ctx, t, base, bob) }()
	waitPermits(t, sc, 1, 2) // bob's export runs

	cancelFirst()
	waitPermits(t, sc, 1, 1)
	go func() { done <- exportOrders(ctx, t, base, alice) }()
	waitPermits(t, sc, 1, 2) // the freed permit serves alice's new export

	cancelAll()
	waitPermits(t, sc) // every export's permit is given back
}
