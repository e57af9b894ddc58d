package redislock_test

import (
	"testing"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/redislock"
)

// GoZeroStore hands out one adapter per go-zero store, so the Stores it
// returns for one store compare equal (a map keyed by them finds them
// again, as when the adapter was a value), and another store gets its own.
func TestGoZeroStoreSameAdapter(t *testing.T) {
	r := zredis.MustNewRedis(zredis.RedisConf{Host: "127.0.0.1:1", Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
	other := zredis.MustNewRedis(zredis.RedisConf{Host: "127.0.0.1:2", Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
	if redislock.GoZeroStore(r) != redislock.GoZeroStore(r) {
		t.Fatal("GoZeroStore(r) != GoZeroStore(r)")
	}
	if redislock.GoZeroStore(r) == redislock.GoZeroStore(other) {
		t.Fatal("two go-zero stores share an adapter")
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = redislock.GoZeroStore(r) }); allocs != 0 {
		t.Fatalf("GoZeroStore of a known store allocates %v times", allocs)
	}
}
