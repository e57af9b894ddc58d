// Package redislock is a distributed lock on Redis that is a drop-in for
// go-zero's core/stores/redis.RedisLock.
//
// Switching from go-zero is a change of import path (and of the type name,
// redis.RedisLock to redislock.RedisLock, where code names it):
//
//	lock := redislock.NewRedisLock(store, "order:42") // store is go-zero's *redis.Redis
//	lock.SetExpire(5)
//	ok, err := lock.AcquireCtx(ctx)
//	if err != nil {
//		return err // Redis failed; the lock may or may not be held
//	}
//	if !ok {
//		return errBusy // somebody else holds it
//	}
//	defer lock.ReleaseCtx(context.WithoutCancel(ctx))
//
// The semantics are go-zero's: acquiring a lock this instance already holds
// refreshes its expiry (re-entrant), only the holder's token releases it,
// the expiry sent to Redis is the configured expiry plus a tolerance (500 ms
// by default), and "not acquired" or "not held" is (false, nil) while only
// a real failure is an error.
//
// Beyond go-zero, the token is 128 bits from crypto/rand, the expiry and
// tolerance can be set in milliseconds (WithExpiry, WithTolerance), the lock
// also runs on go-redis clients (NewWithClient, including Redis Cluster and
// Sentinel failover clients), an instance that does not hold its key
// acquires without a script: on go-redis with a plain SET NX PX that go-redis
// is told not to resend after a lost reply (a resend would answer "not set"
// for the key the first send took), on go-zero's store, whose client
// resends, with SET NX PX GET, which recognises its own token (Redis 7.0 or
// later; older servers get the script). On go-zero's store the scripts run
// with EVAL, so the NOSCRIPT replies of a fresh or flushed server cannot
// reach go-zero's circuit breaker.
package redislock
