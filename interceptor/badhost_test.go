package interceptor_test

import (
	"errors"
	"strings"
	"testing"

	zredis "github.com/zeromicro/go-zero/core/stores/redis"

	"github.com/zerolock/zerolock/interceptor"
	"github.com/zerolock/zerolock/redislock"
)

// TestUnexpandedHostFailsAtStartUp: a LockRedis Host left a literal
// ${VAR} (a main that loads its configuration without conf.UseEnv()) is
// refused when the interceptor is built, naming the fix, instead of
// answering every guarded call Unavailable.
func TestUnexpandedHostFailsAtStartUp(t *testing.T) {
	store := zredis.MustNewRedis(zredis.RedisConf{Host: "${LOCK_REDIS_HOST}", Type: zredis.NodeType, NonBlock: true, DisableIdentity: true})
	_, err := interceptor.UnaryServerInterceptor(payConf(interceptor.ModeInflight, "field:order.id", "metadata:x-user-id"), store)
	if !errors.Is(err, interceptor.ErrBadConfig) || !errors.Is(err, redislock.ErrBadAddress) || !strings.Contains(err.Error(), "conf.UseEnv()") {
		t.Fatalf("err = %v, want ErrBadConfig and redislock.ErrBadAddress naming conf.UseEnv()", err)
	}
}
