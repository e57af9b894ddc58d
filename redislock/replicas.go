package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/zerolock/zerolock/redislock/internal/conn"
)

// WithReplicaAcks makes an acquisition count only once n replicas have
// acknowledged it (WAIT n timeout, on the connection of the write), as
// Redisson does by default. Without it, a master that dies right after
// granting a lock may fail over to a replica that never saw it, and a second
// holder gets in. With it, a missing acknowledgement releases the key and
// the acquire returns ErrNotReplicated. It costs a round trip to a replica
// on every fresh acquisition: use it on Sentinel or Cluster deployments
// whose locks must survive a failover, and size n below the replica count
// so one slow replica does not block every lock. RedisLock and RedLock take
// it; Semaphore, MultiLock and RWLock refuse it (see Option).
func WithReplicaAcks(n int, timeout time.Duration) Option {
	return func(o *options) {
		o.acks, o.acksTimeout = n, timeout
		o.given |= optReplicaAcks
	}
}

// connFor returns a client whose pipelines go to the connection that serves
// the lock's key, for WAIT to count that connection's write.
func (rl *RedisLock) connFor(ctx context.Context) (conn.Pipeliner, error) {
	return rl.conn.PipelinerFor(ctx, rl.Key())
}

// acquireReplicated runs the re-entrant acquire and WAIT in one pipeline and
// releases again when too few replicas acknowledged. A waiting acquire's
// refusal marks the hold, as acquireScript's does.
func (rl *RedisLock) acquireReplicated(ctx context.Context, px time.Duration, waiting bool) (bool, error) {
	pipe, err := rl.connFor(ctx)
	if err != nil {
		return false, err
	}
	var (
		acquire *redis.Cmd
		wait    *redis.Cmd
	)
	_, err = pipe.Pipelined(ctx, func(p redis.Pipeliner) error {
		src, keys := acquireSource, rl.lockKeys()
		if rl.fencing {
			src, keys = fenceSource, rl.more.fenceKeys
		}
		if waiting {
			acquire = p.Eval(ctx, src, rl.waitingKeys(), rl.waitingArgs(px)...)
		} else {
			acquire = p.Eval(ctx, src, keys, rl.tokenArg(), px.Milliseconds())
		}
		wait = p.Do(ctx, "wait", rl.more.acks, rl.more.acksTimeout.Milliseconds())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, err
	}
	ok, err := rl.parseAcquire(acquire.Val())
	if err != nil || !ok {
		return false, err
	}
	if got, _ := wait.Int64(); got < int64(rl.more.acks) {
		_, _ = rl.release(context.WithoutCancel(ctx))
		return false, fmt.Errorf("%w: %d of %d within %v", ErrNotReplicated, got, rl.more.acks, rl.more.acksTimeout)
	}
	return true, nil
}
