package gozero

import (
	"context"
	"time"

	"github.com/zeromicro/go-zero/core/logx"

	"github.com/zerolock/zerolock/redislock/internal/errs"
)

// reprobeAfter is how long a lock's commands wait before they ask a
// server again after a probe that got no verdict: go-zero's breaker
// counts each failed probe, and one per breaker window (10 s) is too few
// to matter while every command would be too many (a proxy that answers
// CLIENT SETINFO with an error this package does not recognise, say).
const reprobeAfter = 10 * time.Second

// Ready prepares the store for a command: a single atomic load once the
// store is settled, that is once it is known to send no CLIENT SETINFO or
// its server's verdict is known and was reported. Before that it waits for
// the address's verdict (one probe per address, see identity.go), and on a
// rejection logs, once per address, the hazard and the fix at error level,
// which services that log errors only still show.
//
// Ready fails only for a nil store, and when ctx ends while it waits (the
// command would fail with the same error): a server that rejects CLIENT
// SETINFO takes the lock's commands as it takes go-zero's own lock's, and
// a probe that got no verdict (the server is down, say) leaves the command
// to meet the trouble itself and the next command after reprobeAfter to
// ask again. Check is what refuses an at-risk store, at start-up.
func (s *Store) Ready(ctx context.Context) error {
	if s.settled.Load() {
		return nil
	}
	return s.settle(ctx)
}

// settle is Ready's slow path.
func (s *Store) settle(ctx context.Context) error {
	if s.R == nil {
		return errNilStore
	}
	if serverVerdict(s.id.verdict.Load()) == verdictUnknown && time.Now().UnixNano() < s.id.retryAt.Load() {
		return nil
	}
	v, err := s.id.verdictOf(ctx, s.R)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return nil
	}
	if v == verdictRejects && identityKnownOn(s.R) && s.id.warned.CompareAndSwap(false, true) {
		logx.Errorf("%s: %s. Locks on the store work meanwhile; the start-up check of the middleware and "+
			"the interceptor refuses it", errs.IdentityRejected, s.id.hazard(s.R.Addr))
	}
	s.settled.Store(true)
	return nil
}
