package gozero

import (
	"testing"

	"github.com/redis/go-redis/v9"
	zredis "github.com/zeromicro/go-zero/core/stores/redis"
)

// The check reads go-zero's unexported identity flag: a go-zero upgrade that
// renames it must fail here, not silently let misconfigured stores through.
func TestIdentityFieldKnown(t *testing.T) {
	for _, tc := range []struct {
		store *zredis.Redis
		want  bool
	}{
		{zredis.New("127.0.0.1:1"), false},
		{zredis.New("127.0.0.1:1", zredis.WithIdentity()), true},
		{zredis.MustNewRedis(zredis.RedisConf{Host: "127.0.0.1:1", Type: zredis.NodeType, NonBlock: true, DisableIdentity: true}), true},
	} {
		disabled, known := identityDisabled(tc.store)
		if !known || disabled != tc.want {
			t.Fatalf("identityDisabled = %v, %v; want %v, true", disabled, known, tc.want)
		}
	}
}

// TestGoZeroTLSFieldKnown pins go-zero's unexported TLS flag, which the
// subscriber for a store's waiters reads (goZeroTLS): a go-zero version
// without it gives waiters no subscription rather than a plaintext one.
func TestGoZeroTLSFieldKnown(t *testing.T) {
	for _, tc := range []struct {
		store *zredis.Redis
		want  bool
	}{
		{zredis.New("127.0.0.1:1"), false},
		{zredis.New("127.0.0.1:1", zredis.WithTLS()), true},
		{zredis.MustNewRedis(zredis.RedisConf{Host: "127.0.0.1:1", Type: zredis.NodeType, NonBlock: true, Tls: true}), true},
	} {
		on, known := goZeroTLS(tc.store)
		if !known || on != tc.want {
			t.Fatalf("goZeroTLS = %v, %v; want %v, true", on, known, tc.want)
		}
		c, ok := Subscriber(&Store{R: tc.store}).(*redis.Client)
		if !ok {
			t.Fatalf("subscriber for a node store is %T", c)
		}
		if got := c.Options().TLSConfig != nil; got != tc.want {
			t.Fatalf("subscriber over TLS = %v for a store with TLS %v", got, tc.want)
		}
		subscribers.Delete(tc.store.Addr) // the next case's store has the same address
		_ = c.Close()
	}
}
