package redislock

import (
	"errors"

	"github.com/zerolock/zerolock/redislock/internal/errs"
)

var (
	// ErrInvalidExpiry is returned by AcquireCtx when the expiry plus the
	// tolerance is not a positive number of milliseconds.
	ErrInvalidExpiry = errors.New("redislock: expiry plus tolerance must be at least 1ms")

	// ErrUnexpectedReply is returned when Redis answers a lock script with a
	// reply the script cannot produce, which means something other than this
	// package wrote the key or the server is not Redis-compatible.
	ErrUnexpectedReply = errs.UnexpectedReply

	// ErrIdentityRejected is returned by the start-up check of the
	// middleware and the interceptor (NewBackend's Check) when go-zero's
	// store sends CLIENT SETINFO on new connections and the server rejects
	// it (Redis before 7.2, miniredis): go-zero's circuit breaker counts
	// each rejection and can open under a burst of new connections. The
	// error names the fix: DisableIdentity: true. It is also a
	// zerolock.ErrMisconfigured. A lock on such a store does not return it:
	// it works, as go-zero's own lock does, and logs the same text once per
	// address at error level.
	ErrIdentityRejected = errs.IdentityRejected

	// ErrBadAddress is returned by the start-up check of the middleware and
	// the interceptor (NewBackend's Check) for a go-zero store whose Host
	// cannot name a server: empty, or a ${VAR} that the configuration
	// loader did not expand (goctl's main loads without conf.UseEnv()), so
	// that such a service fails at start-up, naming the fix, instead of
	// answering every guarded request 503 after the store's timeout. It is
	// also a zerolock.ErrMisconfigured.
	ErrBadAddress = errs.BadAddress

	// ErrWaitCutTry is returned by a waiting acquire (AcquireWaitCtx of
	// every lock kind here) whose wait limit ended a try that was still in
	// flight, which happens only where calls return by their deadline
	// (WithDeadlineGuard, or a go-redis client with ContextTimeoutEnabled).
	// The try may still land, so the lock, permit or share may or may not
	// be held, as after any error: a later acquire or release on the same
	// instance settles it. The error also wraps the try's own error
	// (context.DeadlineExceeded).
	ErrWaitCutTry = errors.New("redislock: the wait limit ended a try in flight, whose outcome is unknown")

	// ErrNoExpiry is returned by TTL when the lock's key exists without an
	// expiry, which a lock never leaves behind: another writer set the key.
	ErrNoExpiry = errors.New("redislock: key exists without an expiry")

	// ErrNotReplicated is returned by an acquire WithReplicaAcks when fewer
	// replicas than asked acknowledged the write in time: the key was
	// released again, and the lock is not held.
	ErrNotReplicated = errors.New("redislock: acquisition not acknowledged by enough replicas")

	// ErrOptionNotApplicable is matched by the refusal of an option that a
	// kind of lock has no use for (WithFencing by a Semaphore, say): the
	// constructors that return an error return it, and the locks of the
	// others return it from every acquire and refresh (see Option). The
	// error names the options refused and the key.
	ErrOptionNotApplicable = errors.New("redislock: option does not apply to this kind of lock")

	// ErrReplicaAcksUnsupported is returned when WithReplicaAcks is used on
	// a store that cannot send WAIT on the connection of the write (go-zero's
	// cluster store, a Ring). The refusal of WithReplicaAcks by a kind of
	// lock that does not wait for replicas (a Semaphore, a MultiLock, an
	// RWLock) matches it too, besides ErrOptionNotApplicable.
	ErrReplicaAcksUnsupported = errs.ReplicaAcksUnsupported

	// ErrQuorum is matched (errors.Is) by the *QuorumError a RedLock returns
	// when it could not decide on a majority of its nodes.
	ErrQuorum = errors.New("redislock: no quorum")

	// ErrInvalidPermits is returned by NewSemaphore (and by the NewSemaphore
	// of a NewBackend backend) when permits is less than 1.
	ErrInvalidPermits = errors.New("redislock: permits must be at least 1")

	// ErrNotSemaphore is returned when a semaphore's key holds something
	// other than a semaphore: a RedisLock or any other value under the same
	// name. The error names the type the key holds (WRONGTYPE); the scripts
	// report it instead of failing, so go-zero's circuit breaker, which
	// counts every error reply, does not open for the whole store. It is
	// also a zerolock.ErrMisconfigured.
	ErrNotSemaphore = errs.Misconfigured("redislock: key holds a value that is not a semaphore")

	// ErrInvalidRate is returned by the Rate of a NewBackend backend for a
	// quota under 1 or a period under a millisecond.
	ErrInvalidRate = errors.New("redislock: a rate needs a quota of at least 1 and a period of at least 1ms")

	// ErrNotRateLog is returned by the Rate of a NewBackend backend when
	// its key holds something other than a rate log (another kind of
	// sorted set is not told apart): a lock or any other value under the
	// same name. The error names the type the key holds (WRONGTYPE); the
	// script reports it instead of failing, so go-zero's circuit breaker,
	// which counts every error reply, does not open for the whole store.
	// It is also a zerolock.ErrMisconfigured.
	ErrNotRateLog = errs.Misconfigured("redislock: key holds a value that is not a rate log")

	// ErrInvalidKeys is returned by NewMultiLock, wrapped with what is
	// wrong, for a key list it cannot lock: an empty one ("no keys"), or
	// one in which a key appears twice (the message names that key).
	ErrInvalidKeys = errors.New("redislock: invalid multi-lock keys")

	// ErrNotLockKey is returned, wrapped with the key and the type it holds
	// (WRONGTYPE), when a multi-lock's key holds something other than a
	// lock: a semaphore, a read-write lock or any value that is not a
	// string. The scripts check every key's type before they write and
	// report it instead of failing, so go-zero's circuit breaker, which
	// counts every error reply, does not open for the whole store.
	ErrNotLockKey = errors.New("redislock: key holds a value that is not a lock")

	// ErrOtherSideHeld is returned by RLockCtx (and RLockWaitCtx) when the
	// same RWLock instance holds the write side, and by LockCtx (and
	// LockWaitCtx) when it holds a read share: an instance holds one side
	// at a time, and upgrading or downgrading in place is not offered
	// (release one side, then take the other).
	ErrOtherSideHeld = errors.New("redislock: this RWLock instance holds the other side")

	// ErrNotRWLock is returned when the key of an RWLock, or one of the
	// companion keys beside it (the readers' set, a waiting writer's
	// intent, the fencing counter), holds a value of another type: a
	// Semaphore's sorted set, say, or any other value under that name. The
	// error names the key and the type it holds (WRONGTYPE). The scripts
	// check the types before writing anything and report a mismatch
	// instead of failing, so go-zero's circuit breaker, which counts every
	// error reply, does not open for the whole store. (A RedisLock on the
	// same key is no mismatch: it holds the key as a writer does.)
	ErrNotRWLock = errors.New("redislock: key holds a value that is not a read-write lock")
)
