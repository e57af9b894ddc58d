package market

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/zerolock/zerolock/internal/testing/redistest"
)

// shared is the test binary's redis-server, started on first use and
// stopped by TestMain before goleak looks for leftover goroutines (the
// server's wait goroutine would be one).
var shared struct {
	once sync.Once
	dir  string
	srv  *redistest.Server
	err  error
}

func TestMain(m *testing.M) {
	redistest.Quiet()
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Kill()
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	if code == 0 {
		if err := goleak.Find(redistest.LeakOptions()...); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newClient returns a client of the shared redis-server, closed when the
// test ends. Without redis-server the test is skipped, or fails when
// redistest.RequireEnv is set, as redistest.Start does.
func newClient(tb testing.TB) *redis.Client {
	tb.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv(redistest.RequireEnv) == "1" {
			tb.Fatalf("redis-server not found and %s=1: %v", redistest.RequireEnv, err)
		}
		tb.Skipf("redis-server not installed (run make test, or apt-get install redis-server)")
	}
	shared.once.Do(func() {
		if shared.dir, shared.err = os.MkdirTemp("", "zerolock-market-"); shared.err == nil {
			shared.srv, shared.err = redistest.Launch(shared.dir)
		}
	})
	if shared.err != nil {
		tb.Fatalf("start redis-server: %v", shared.err)
	}
	return shared.srv.Client(tb)
}

// testKeys returns keys of the test's own: tests share the server, and a
// test run again (go test -count=3) must not find its previous run's data.
func testKeys(tb testing.TB) Keys {
	return Keys(fmt.Sprintf("test:%s:%d", tb.Name(), runs.Add(1)))
}

var runs atomic.Int64

// implementations builds each Market under test on client and keys.
var implementations = []struct {
	name string
	new  func(redis.UniversalClient, Keys, ...Option) Market
}{
	{"optimistic", func(c redis.UniversalClient, k Keys, o ...Option) Market { return NewOptimistic(c, k, o...) }},
	{"pessimistic", func(c redis.UniversalClient, k Keys, o ...Option) Market { return NewPessimistic(c, k, o...) }},
}

var granularities = []Granularity{PerItem, WholeMarket}

// snapshot renders the funds, inventories and listings of users, to show
// that a failed operation changed nothing.
func snapshot(tb testing.TB, client *redis.Client, keys Keys, users ...string) string {
	tb.Helper()
	ctx := context.Background()
	var b strings.Builder
	for _, u := range users {
		funds, err := client.HGet(ctx, keys.User(u), FundsField).Result()
		if err != nil && err != redis.Nil {
			tb.Fatal(err)
		}
		inv := client.SMembers(ctx, keys.Inventory(u)).Val()
		sort.Strings(inv)
		fmt.Fprintf(&b, "%s funds=%s inventory=%v\n", u, funds, inv)
	}
	listed, err := client.ZRangeWithScores(ctx, keys.Listings(), 0, -1).Result()
	if err != nil {
		tb.Fatal(err)
	}
	fmt.Fprintf(&b, "listed=%v", listed)
	return b.String()
}

// seedUsers gives each user its funds and items.
func seedUsers(tb testing.TB, client *redis.Client, keys Keys, funds map[string]int64, items map[string][]string) {
	tb.Helper()
	ctx := context.Background()
	for u, f := range funds {
		if err := client.HSet(ctx, keys.User(u), FundsField, f).Err(); err != nil {
			tb.Fatal(err)
		}
	}
	for u, its := range items {
		for _, it := range its {
			if err := client.SAdd(ctx, keys.Inventory(u), it).Err(); err != nil {
				tb.Fatal(err)
			}
		}
	}
}
