package redislock

import (
	"testing"

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
