package gozero

import (
	"fmt"
	"strings"

	"github.com/zerolock/zerolock/redislock/internal/errs"
)

// checkAddr refuses a store Host that cannot name a server, with an error
// wrapping errs.BadAddress that names the fix: an empty one, and one that
// still holds a ${VAR} (or $VAR) the configuration loader did not expand.
// A cluster's Host lists its nodes with commas; each must be an address.
func checkAddr(addr string) error {
	if strings.TrimSpace(addr) == "" {
		return fmt.Errorf("%w: Host is empty: set the Redis section's Host to host:port (127.0.0.1:6379)", errs.BadAddress)
	}
	for _, node := range strings.Split(addr, ",") {
		if strings.Contains(node, "$") {
			return fmt.Errorf("%w: Host is %q, a variable the configuration loader did not expand: "+
				"load the configuration with conf.MustLoad(*configFile, &c, conf.UseEnv()) "+
				"(goctl's main calls conf.MustLoad(*configFile, &c) without it), or write the address", errs.BadAddress, addr)
		}
		if strings.TrimSpace(node) == "" {
			return fmt.Errorf("%w: Host %q has an empty node: list the nodes as host:port,host:port", errs.BadAddress, addr)
		}
	}
	return nil
}
