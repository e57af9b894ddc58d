package gozero

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/zerolock/zerolock/redislock/internal/errs"
)

// checkAddr refuses a store Host that cannot name a server, with an error
// wrapping errs.BadAddress that names the fix: an empty one, and one that
// still holds a ${VAR} (or $VAR) the configuration loader did not expand.
// A cluster's Host lists its nodes with commas; each must be host:port
// (or a unix socket's path).
func checkAddr(addr string) error {
	if strings.TrimSpace(addr) == "" {
		return fmt.Errorf("%w: Host is empty: set the Redis section's Host to host:port (127.0.0.1:6379)", errs.BadAddress)
	}
	for _, node := range strings.Split(addr, ",") {
		node = strings.TrimSpace(node) // go-zero trims a cluster's nodes too
		if strings.Contains(node, "$") {
			return fmt.Errorf("%w: Host is %q, a variable the configuration loader did not expand: "+
				"load the configuration with conf.MustLoad(*configFile, &c, conf.UseEnv()) "+
				"(goctl's main calls conf.MustLoad(*configFile, &c) without it), or write the address", errs.BadAddress, addr)
		}
		if strings.TrimSpace(node) == "" {
			return fmt.Errorf("%w: Host %q has an empty node: list the nodes as host:port,host:port", errs.BadAddress, addr)
		}
		if strings.HasPrefix(node, "/") {
			continue // a unix socket's path
		}
		if _, port, err := net.SplitHostPort(node); err != nil || !isPort(port) {
			return fmt.Errorf("%w: Host %q: %q is not host:port: write the port too (127.0.0.1:6379)", errs.BadAddress, addr, node)
		}
	}
	return nil
}

// isPort reports whether p is a port number.
func isPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536
}
