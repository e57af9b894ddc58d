package redislock_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/internal/testing/redistest"
	"github.com/zerolock/zerolock/redislock"
)

// The names go-zero's RedisLock tests (gozero_locktests_test.go, copied
// from go-zero) use from go-zero's package, bound to zerolock's drop-in.

// Redis is go-zero's store.
type Redis = zredis.Redis

// NewRedisLock is zerolock's drop-in for go-zero's redis.NewRedisLock.
func NewRedisLock(store *Redis, key string) *redislock.RedisLock {
	return redislock.NewRedisLock(store, key)
}

// runOnRedis runs fn, as go-zero's helper of that name does, on a store
// made with go-zero's default RedisConf (identity on, so the store sends
// CLIENT SETINFO on every new connection), once on miniredis, as go-zero's
// helper does, and once on a real redis-server (7.0, Debian 12's; a
// missing one fails the test where ZEROLOCK_REQUIRE_REDIS=1). Both reject
// CLIENT SETINFO, and go-zero's own RedisLock works on both. Each run has a
// server of its own, on a port no other test of the binary used: go-zero
// keeps one client per address for the process.
func runOnRedis(t *testing.T, fn func(client *Redis)) {
	t.Helper()
	for _, srv := range []struct {
		name string
		addr func(t *testing.T) string
	}{
		{"miniredis", func(t *testing.T) string { return miniredis.RunT(t).Addr() }},
		{"redis-server", func(t *testing.T) string { return redistest.Start(t).Addr() }},
	} {
		t.Run(srv.name, func(t *testing.T) {
			fn(zredis.MustNewRedis(zredis.RedisConf{
				Host: srv.addr(t),
				Type: zredis.NodeType,
			}))
		})
	}
}

// TestGoZeroLockTestsAreVerbatim keeps gozero_locktests_test.go what its
// header says it is: go-zero's redislock_test.go of the version in go.mod,
// with only the package clause changed.
func TestGoZeroLockTestsAreVerbatim(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/zeromicro/go-zero").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/zeromicro/go-zero: %v", err)
	}
	upstream, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "core", "stores", "redis", "redislock_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	ours, err := os.ReadFile("gozero_locktests_test.go")
	if err != nil {
		t.Fatal(err)
	}
	const clause = "package redislock_test\n"
	i := bytes.Index(ours, []byte(clause))
	if i < 0 {
		t.Fatalf("gozero_locktests_test.go has no %q", clause)
	}
	copied := append([]byte("package redis\n"), ours[i+len(clause):]...)
	if !bytes.Equal(copied, upstream) {
		t.Fatal("gozero_locktests_test.go, below its header and package clause, is not go-zero's " +
			"core/stores/redis/redislock_test.go of the version in go.mod: copy that file again")
	}
}
