// Package embedredis is the examples' embedded Redis: a miniredis on a
// loopback port whose keys expire in real time, so that go run works with
// nothing installed and behaves like a redis-server.
package embedredis

import (
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
)

// clockTick is how often the embedded miniredis's clock is moved on. A key
// expires at the first tick after its time has passed, give or take one
// tick: up to 50 ms late, or early when it was set between ticks (the
// tick that follows ages it by the whole interval), which the locks' 500 ms
// tolerance absorbs.
const clockTick = 50 * time.Millisecond

// Server is a miniredis on a free loopback port whose keys expire in
// real time, as a redis-server's do.
//
// miniredis keeps each key's remaining time and lowers it only when told
// to (FastForward; SetTime moves only the clock that TIME, EXPIREAT and
// stream IDs read, which is the real one unless set, and by which the
// semaphores' and read locks' permits expire), so left alone its keys
// never expire: a window-mode rule would
// refuse the repeat forever, and a crashed holder's lock would never be
// freed. A goroutine moves it on by the real time elapsed, every clockTick,
// until Close. (A hook before each command would be exact, but miniredis
// runs a script's commands through the same hook while it holds the lock
// that FastForward takes.)
type Server struct {
	*miniredis.Miniredis
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// Start starts a Server and its clock. Close stops both.
func Start() (*Server, error) {
	m := miniredis.NewMiniRedis()
	if err := m.StartAddr("127.0.0.1:0"); err != nil {
		return nil, err
	}
	e := &Server{Miniredis: m, stop: make(chan struct{}), done: make(chan struct{})}
	go e.runClock()
	return e, nil
}

// runClock fast-forwards the server by the time elapsed on the monotonic
// clock since the previous tick, so a late tick catches up in full.
func (e *Server) runClock() {
	defer close(e.done)
	ticker := time.NewTicker(clockTick)
	defer ticker.Stop()
	last := time.Now()
	for {
		select {
		case <-e.stop:
			return
		case <-ticker.C:
			now := time.Now()
			e.FastForward(now.Sub(last))
			last = now
		}
	}
}

// Close stops the clock, waits for it, and stops the server. It may be
// called more than once.
func (e *Server) Close() {
	e.closeOnce.Do(func() {
		close(e.stop)
		<-e.done
		e.Miniredis.Close()
	})
}
