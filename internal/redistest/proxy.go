package redistest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A Proxy forwards TCP connections from a loopback port to a server and
// can slow them down or cut them, to put a node behind a slow or faulty
// network in a test.
type Proxy struct {
	listener net.Listener
	target   string
	latency  atomic.Int64 // time.Duration added before each client->server write

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// StartProxy listens on a free loopback port and forwards to target until
// the test ends.
func StartProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: proxy listen: %v", err)
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

// SetLatency delays every chunk a client sends by d (0 for none).
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
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // close with RST, not FIN
		}
		_ = c.Close()
	}
}

// Close stops accepting, cuts every connection and waits for the copying
// goroutines to end.
func (p *Proxy) Close() {
	_ = p.listener.Close()
	p.mu.Lock()
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.listener.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.track(client, server)
		p.wg.Add(2)
		go p.pipe(server, client, true)
		go p.pipe(client, server, false)
	}
}

// track registers connections for Close to cut.
func (p *Proxy) track(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
}

// pipe copies from src to dst, delaying each chunk when slow, and closes
// both ends when either side is done.
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
