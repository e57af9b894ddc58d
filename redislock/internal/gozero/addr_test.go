package gozero

import (
	"errors"
	"strings"
	"testing"

	"github.com/zerolock/zerolock"
	"github.com/zerolock/zerolock/redislock/internal/errs"
)

// TestCheckAddr: a Host that cannot name a server is refused, naming the
// fix; one that can is accepted (whether it answers is the probe's job).
func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr, fix string
	}{
		{"", "set the Redis section's Host"},
		{"  ", "set the Redis section's Host"},
		{"${ZEROLOCK_REDIS_HOST}", "conf.UseEnv()"},
		{"$REDIS_HOST:6379", "conf.UseEnv()"},
		{"127.0.0.1:7000,${NODE2}", "conf.UseEnv()"},
		{"127.0.0.1:7000,", "host:port,host:port"},
		{"redis", "write the port too"},
		{"127.0.0.1:6379x", "write the port too"},
	} {
		err := checkAddr(tc.addr)
		if !errors.Is(err, errs.BadAddress) || !errors.Is(err, zerolock.ErrMisconfigured) || !strings.Contains(err.Error(), tc.fix) {
			t.Errorf("checkAddr(%q) = %v, want BadAddress (a zerolock.ErrMisconfigured) naming %q", tc.addr, err, tc.fix)
		}
	}
	for _, addr := range []string{"127.0.0.1:6379", "redis:6379", "10.0.0.1:7000,10.0.0.2:7000", "[::1]:6379", "/run/redis.sock", "10.0.0.1:7000 , 10.0.0.2:7000"} {
		if err := checkAddr(addr); err != nil {
			t.Errorf("checkAddr(%q) = %v, want nil", addr, err)
		}
	}
}
