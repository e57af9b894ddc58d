package zklock

import "time"

// armTimer (re)starts the expiry timer of the current hold: an unwatched
// lock deletes its own node after its expiry, as a Redis key would expire,
// so a lock kept past its handler (the middleware's window mode) ends by
// itself. l.mu is held.
func (l *Lock) armTimer() {
	if l.timer != nil {
		l.timer.Stop()
	}
	gen := l.gen
	l.timer = time.AfterFunc(l.o.expiry, func() { l.expire(gen) })
}

// stopTimer stops the expiry timer; l.mu is held.
func (l *Lock) stopTimer() {
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

// expire ends hold gen when its expiry passed unwatched.
func (l *Lock) expire(gen uint64) {
	l.mu.Lock()
	if l.gen != gen || l.dog != nil || l.node == "" {
		l.mu.Unlock()
		return
	}
	node, session := l.node, l.session
	l.forget()
	l.lapsed = true
	l.mu.Unlock()
	l.discard(node, session)
}

// forget drops the current hold without touching ZooKeeper; l.mu is held.
func (l *Lock) forget() {
	l.node, l.session = "", 0
	l.gen++
	l.stopTimer()
}
