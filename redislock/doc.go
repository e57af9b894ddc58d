// Package redislock is a distributed lock on Redis and a drop-in for
// go-zero's core/stores/redis.RedisLock. Start with NewRedisLock:
//
//	lock := redislock.NewRedisLock(store, "order:42") // store: go-zero's *redis.Redis
//	lock.SetExpire(5)
//	ok, err := lock.AcquireCtx(ctx) // err: Redis failed; !ok: somebody else holds it
//	if err != nil || !ok {
//		return ok, err
//	}
//	defer lock.ReleaseCtx(context.WithoutCancel(ctx))
//
// On a go-redis client (a *redis.Client, a *redis.ClusterClient, or a
// Sentinel client from redis.NewFailoverClient, each a Store) the same lock is New, and
// options set what go-zero's API cannot:
//
//	lock := redislock.New(rdb, "report:q3",
//		redislock.WithExpiry(2*time.Second), redislock.WithFencing())
//	ok, err := lock.AcquireWaitCtx(ctx, 10*time.Second) // woken when the holder releases
//	lockCtx := lock.Watch(ctx)                           // renewed; cancelled if the lock is lost
//	fence := lock.Fence()                                // for storage that refuses older holders
//
// The options: WithExpiry and WithTolerance (milliseconds, not go-zero's
// whole seconds), WithFencing, WithReplicaAcks (wait for replicas, to
// survive a failover), WithBackoff (the waiting acquire's fallback),
// WithoutWakeups (no release announcement, for locks nobody waits on),
// WithDeadlineGuard (return when ctx ends even if the client would wait
// longer), WithName (the lock's label in metrics and traces), and for
// NewRedLock, WithNodeTimeout. An option that a kind of lock has no use
// for is refused with ErrOptionNotApplicable (see Option).
//
// Beyond the mutex, on the same stores (go-zero's through GoZeroStore, and
// go-redis clients), with the options that apply to each, woken waiting,
// Watch and Refresh:
//
//   - NewSemaphore: at most N holders of a key, each permit expiring on its
//     own (cap concurrent exports per user).
//   - NewMultiLock: several keys, all or none (deduct the stock of every
//     SKU of an order); atomic within one slot, ordered with give-back
//     across Cluster slots.
//   - NewRWLock: many readers or one writer, a waiting writer holding new
//     readers back, the writer fenced WithFencing (rebuild a cache while
//     readers read).
//
// NewRedLock runs the Redlock algorithm over independent masters, for a
// lock that must survive the loss of a master: a RedLock acquires and
// releases as a RedisLock does, without waiting, Watch or Refresh.
//
// Switching from go-zero is a change of import path (and of the type name,
// redis.RedisLock to redislock.RedisLock, where code names it). The
// semantics are go-zero's: acquiring a lock this instance already holds
// refreshes its expiry (re-entrant), only the holder's token releases it,
// the expiry sent to Redis is the configured expiry plus a tolerance (500 ms
// by default), and "not acquired" or "not held" is (false, nil) while only
// a real failure is an error.
//
// A RedisLock is a zerolock.Locker, zerolock.Waiter, zerolock.TTLer,
// zerolock.Watcher, zerolock.Fencer and zerolock.Refresher. NewBackend and
// NewRedLockBackend make the zerolock.Backend that the middleware and the
// interceptor take; the NewSemaphore of NewBackend's backend is their limit
// mode, and its Rate (a zerolock.RateBackend: a sliding log on the
// server's clock, exact, one script and one key per request) their rate
// mode.
//
// Every lock reports to package observe under its name: acquires by
// outcome, wait and hold times, renewals, renew failures and lost locks by
// cause (the watchdog tells a deleted key from one taken over), releases
// that found the lock gone; and, under a recording span, a
// "zerolock.acquire" span per acquire and loss events on Watch's span. A
// RedLock reports as one lock (backend "redlock"), its node locks not at
// all. A waiting acquire that its context's deadline ends counts as a
// timeout, as one whose wait limit passed; one whose context is cancelled,
// as an error.
//
// How the lock uses Redis (its acquire paths, and why go-zero's store runs
// scripts with EVAL) is in docs/REDISLOCK-INTERNALS.md.
package redislock
