package guard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock"
)

// checkName is the name of the locks Check and CheckLimit make only to
// inspect the backend's abilities: they are never acquired.
const checkName = "zerolock:check"

// Check tells whether the backend's locks can do what the configuration
// asks of every rule: Fence needs a Fencer. Compile checks each rule's
// policy (checkPolicy): renewal needs a Watcher, replay mode a Recorder,
// limit mode semaphores.
func (g *Guard) Check() error {
	return g.checkPolicy(Policy{Expire: time.Second})
}

// checkPolicy tells whether the backend's locks can serve a rule of
// policy p (not in limit mode: see CheckLimit).
func (g *Guard) checkPolicy(p Policy) error {
	lock := g.Backend.NewLocker(checkName, zerolock.LockerOptions{Expiry: time.Second, Fencing: g.Fence, Name: checkName})
	if _, ok := lock.(zerolock.Recorder); p.Replay && !ok {
		return fmt.Errorf("%w: replay mode needs a lock backend that can store a result in place of its lock "+
			"(%T cannot: Redlock, etcd and ZooKeeper locks cannot); use a Redis store, or inflight or window mode", ErrBadPolicy, lock)
	}
	if _, ok := lock.(zerolock.RecordWaiter); p.Wait > 0 && !ok {
		return fmt.Errorf("%w: Wait needs a lock backend that can wait for a stored result (%T cannot); "+
			"use a Redis store backend, or remove Wait", ErrBadPolicy, lock)
	}
	if _, ok := lock.(zerolock.Fencer); g.Fence && !ok {
		return fmt.Errorf("%w: Fence needs a lock backend that mints fencing tokens (%T cannot)", ErrBadPolicy, lock)
	}
	if _, ok := lock.(zerolock.Watcher); p.Renew && !ok {
		return fmt.Errorf("%w: the hold is renewed while the handler runs, and %T cannot renew: "+
			"use a backend whose locks can, or set DisableRenew: true (a handler slower than Expire may then run "+
			"beside its duplicate)", ErrBadPolicy, lock)
	}
	return nil
}

// CheckLimit tells whether the backend can serve a rule in limit mode
// with policy p: it must be a zerolock.SemaphoreBackend (a Redis store
// backend is; Redlock, etcd and ZooKeeper backends are not), whose
// semaphores can renew when p.Renew is set. Fence is refused: up to
// Permits requests hold one key at once, so a fencing token would order
// nothing. The errors wrap ErrBadPolicy and name the fix.
func (g *Guard) CheckLimit(p Policy) error {
	if g.Fence {
		return fmt.Errorf("%w: Fence cannot be used in limit mode: up to Permits requests hold one key at once, "+
			"so no fencing token orders them; use inflight mode for a fenced route", ErrBadPolicy)
	}
	sb, ok := g.Backend.(zerolock.SemaphoreBackend)
	if !ok {
		return fmt.Errorf("%w: limit mode needs a lock backend that makes semaphores (%T cannot: "+
			"Redlock, etcd and ZooKeeper backends cannot); use a Redis store backend "+
			"(a go-zero store or go-redis client, redislock.NewBackend)", ErrBadPolicy, g.Backend)
	}
	sem, err := sb.NewSemaphore(checkName, 1, zerolock.LockerOptions{Expiry: time.Second, Name: checkName})
	if err != nil {
		return fmt.Errorf("%w: limit mode: %v", ErrBadPolicy, err)
	}
	if _, ok := sem.(zerolock.Watcher); p.Renew && !ok {
		return fmt.Errorf("%w: a permit is renewed while the handler runs, and the backend's semaphores (%T) cannot renew: "+
			"set DisableRenew: true", ErrBadPolicy, sem)
	}
	return nil
}

// CheckRate tells whether the backend can serve a rule in rate mode: it
// must be a zerolock.RateBackend (a Redis store backend is; Redlock, etcd
// and ZooKeeper backends are not). Fence is refused: a rate rule takes no
// lock, so there is no hold for a fencing token to order. The errors wrap
// ErrBadPolicy and name the fix.
func (g *Guard) CheckRate() error {
	if g.Fence {
		return fmt.Errorf("%w: Fence cannot be used in rate mode: a rate rule takes no lock, so no fencing token "+
			"orders its requests; use inflight mode for a fenced route", ErrBadPolicy)
	}
	if _, ok := g.Backend.(zerolock.RateBackend); !ok {
		return fmt.Errorf("%w: rate mode needs a lock backend that counts requests against a rate (%T cannot: "+
			"Redlock, etcd and ZooKeeper backends cannot); use a Redis store backend "+
			"(a go-zero store or go-redis client, redislock.NewBackend)", ErrBadPolicy, g.Backend)
	}
	return nil
}

// backendCheckTimeout bounds the start-up check of a backend, as go-zero's
// own PingTimeout does.
const backendCheckTimeout = time.Second

// CheckBackend asks a backend that is a zerolock.Checker, at start-up,
// whether it is set up to work. It returns a misconfiguration (an error
// wrapping zerolock.ErrMisconfigured, such as a go-zero store whose server
// rejects CLIENT SETINFO, which would trip the store's own circuit
// breaker), naming the fix; a lock service that cannot be reached now is
// logged, and the locks ask again before their first command (where a
// go-zero store's locks log a rejection of CLIENT SETINFO once and work
// on: only this start-up check refuses it).
func (g *Guard) CheckBackend() error {
	c, ok := g.Backend.(zerolock.Checker)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), backendCheckTimeout)
	defer cancel()
	err := c.Check(ctx)
	if err != nil && !errors.Is(err, zerolock.ErrMisconfigured) {
		logx.Errorf("zerolock: %v (the locks ask again before their first command)", err)
		return nil
	}
	return err
}
