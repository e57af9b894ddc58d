package testproc

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// handedOut holds every port FreePort has returned in this process.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// FreePort asks the kernel for a free loopback port that FreePort has not
// returned before in this process. Another process may take it before the
// caller's server binds it, so callers check that the server answering is
// theirs and retry on another port. It returns the listen error when no
// port is free.
//
// A port is never handed out twice because clients outlive the servers a
// test kills: go-zero keeps one Redis client per address for the whole
// process, and a client whose dials failed against a killed server keeps
// answering "connection refused" for up to a second after any new server
// comes up on the same address.
func FreePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = make(map[int]bool)
	}
	for i := 0; i < 100; i++ {
		port, err := kernelPort()
		if err != nil {
			return 0, err
		}
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("find a free port: the kernel offered only ports handed out before")
}

func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
