package faultproxy

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A Proxy forwards TCP connections from a loopback port to a server, and
// breaks them on command. Create it with Start.
type Proxy struct {
	listener net.Listener
	target   string       // guarded by mu
	latency  atomic.Int64 // time.Duration added before each client->server write

	mu    sync.Mutex
	cut   bool // refuse new connections: between Cut and Heal, and after Close
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// Start listens on a free loopback port and forwards each connection to
// target until the test ends (Close).
func Start(tb testing.TB, target string) *Proxy {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("faultproxy: listen: %v", err)
	}
	p := &Proxy{listener: l, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.Close)
	return p
}

// Addr returns the address clients should dial.
func (p *Proxy) Addr() string {
	return p.listener.Addr().String()
}

// SetLatency delays every chunk a client sends by d (0 for none); what
// the server sends back is not delayed.
func (p *Proxy) SetLatency(d time.Duration) {
	p.latency.Store(int64(d))
}

// Reset cuts every open connection with a TCP reset, on both sides, and
// returns once they are closed: a command the proxy has not yet delivered
// is lost, and one already delivered may have run without its reply
// reaching the client. New connections are accepted as before.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Every connection is set to close with RST before any is closed: a
	// copying goroutine that sees its peer closed closes the other side at
	// once, which would otherwise send that side a FIN.
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

// Cut closes every open connection and refuses new ones (accepts and
// closes them at once) until Heal, as a broken network would: the client
// cannot reach the server, and the server stops hearing from it.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	p.closeConns()
}

// Heal lets connections through again after Cut.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

// Retarget sends new connections to target from now on and closes the open
// ones, as a failover to another server looks to a client: it reconnects,
// and finds the other server where the old one was.
func (p *Proxy) Retarget(target string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.target = target
	p.closeConns()
}

// Close stops accepting, closes every connection and waits for the
// copying goroutines to end. Start registers it with the test's Cleanup;
// calling it again does nothing more.
func (p *Proxy) Close() {
	_ = p.listener.Close()
	p.Cut()
	p.wg.Wait()
}

// closeConns closes every tracked connection; the caller holds mu.
func (p *Proxy) closeConns() {
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut, target := p.cut, p.target
		p.mu.Unlock()
		if cut {
			_ = client.Close()
			continue
		}
		server, err := net.Dial("tcp", target)
		if err != nil {
			_ = client.Close()
			continue
		}
		if !p.track(target, client, server) {
			continue
		}
		p.wg.Add(2)
		go p.pipe(server, client, true)
		go p.pipe(client, server, false)
	}
}

// track registers connections to target for Reset, Cut and Close; it
// closes them and reports false when a Cut or a Retarget came first.
func (p *Proxy) track(target string, conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	gone := p.cut || p.target != target
	for _, c := range conns {
		if gone {
			_ = c.Close()
			continue
		}
		p.conns[c] = struct{}{}
	}
	return !gone
}

// pipe copies from src to dst, delaying each chunk by the latency when
// slow (the client->server direction), and closes both ends when either
// side is done.
func (p *Proxy) pipe(dst, src net.Conn, slow bool) {
	defer p.wg.Done()
	defer func() {
		_ = dst.Close()
		_ = src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.latency.Load()); slow && d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil { // io.EOF or a cut connection: done either way
			return
		}
	}
}
