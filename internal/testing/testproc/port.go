package testproc

import (
	"fmt"
	"net"
)

// FreePort asks the kernel for a free loopback port. Another process may
// take it before the caller's server binds it, so callers check that the
// server answering is theirs and retry on another port. It returns the
// listen error when no port is free.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
