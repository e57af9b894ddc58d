package testproc

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// handedOut holds every port FreePort has returned in this process.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// FreePort returns a free loopback port that FreePort has not returned
// before in this process, chosen below the kernel's ephemeral range, so
// that no listener on port 0 in this process (miniredis.Run, httptest, a
// gRPC server on ":0") is ever given it, before or after. Another process
// may take it before the caller's server binds it, so callers check that
// the server answering is theirs and retry on another port. It returns
// the listen error when no port is free.
//
// A port is never handed out twice, nor shared with a port-0 listener,
// because clients outlive the servers a test kills: go-zero keeps one
// Redis client per address for the whole process, with the hooks of the
// first store made for it (a test's hook that resends every command, say),
// and a client whose dials failed against a killed server keeps answering
// "connection refused" for up to a second after any new server comes up on
// the same address.
func FreePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = make(map[int]bool)
	}
	low, high := fixedRange()
	for i := 0; i < 200; i++ {
		port, err := pick(low, high)
		if err != nil {
			return 0, err
		}
		if port != 0 && !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port, nil
		}
	}
	return 0, errors.New("find a free port: every port tried was taken or handed out before")
}

// pick returns a free port in [low, high), or 0 if the one it tried is
// taken; with no such range it takes the kernel's choice.
func pick(low, high int) (int, error) {
	if high <= low {
		return kernelPort()
	}
	port := low + rand.IntN(high-low)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return 0, nil
	}
	l.Close()
	return port, nil
}

// fixedRange is the range FreePort picks from: the ports between 10000
// and the start of the kernel's ephemeral range, which port-0 listeners
// never get. It is empty where the ephemeral range is unknown or starts
// too low to leave room; FreePort then takes the kernel's choice.
func fixedRange() (low, high int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	start, err := strconv.Atoi(f[0])
	if err != nil || start < 12000 {
		return 0, 0
	}
	return 10000, start
}

func kernelPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
