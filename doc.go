// Package zerolock is the lock contract that zerolock's locks implement and
// its REST middleware and gRPC interceptor use. It imports no backend.
//
// Start with a backend package: redislock (go-zero's store or a go-redis
// client, with NewRedisLock as a drop-in for go-zero's RedisLock), etcdlock
// or zklock. Their locks are Lockers, and their NewBackend functions make
// the Backend that middleware.NewLockMiddlewareWithBackend and
// interceptor.UnaryServerInterceptorWithBackend take:
//
//	backend := etcdlock.NewBackend(client)             // a zerolock.Backend
//	lock := backend.NewLocker("order:42", zerolock.LockerOptions{Expiry: 5 * time.Second})
//	ok, err := lock.AcquireCtx(ctx)                     // false, nil: somebody else holds it
//
// The contract is small, in the manner of database/sql/driver: a Locker
// acquires and releases; a Waiter also waits; and a Locker may offer the
// optional abilities TTLer, Watcher and Fencer, which callers discover with
// a type assertion. Each method's comment says what an implementation must
// guarantee. Package locktest checks those guarantees against every
// implementation, and runs on a third party's Backend too.
package zerolock
