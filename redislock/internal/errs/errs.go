// Package errs holds the sentinels of redislock that its plumbing returns
// too; redislock's errors.go exports each under its Err name, with its
// documentation, so that errors.Is holds whichever package made the error.
package errs

import (
	"errors"

	"github.com/zerolock/zerolock"
)

var (
	// UnexpectedReply is redislock.ErrUnexpectedReply.
	UnexpectedReply = errors.New("redislock: unexpected reply from redis")

	// IdentityRejected is redislock.ErrIdentityRejected.
	IdentityRejected = Misconfigured("redislock: the Redis server rejects CLIENT SETINFO, which this go-zero store sends on every new connection")

	// BadAddress is redislock.ErrBadAddress.
	BadAddress = Misconfigured("redislock: the go-zero store's Host is not an address")

	// ReplicaAcksUnsupported is redislock.ErrReplicaAcksUnsupported.
	ReplicaAcksUnsupported = errors.New("redislock: WithReplicaAcks needs a node, Sentinel or go-redis cluster client, or go-zero's node store")
)

// misconfiguredError is a sentinel of redislock that says the store is set
// up wrong: errors.Is matches it, and also zerolock.ErrMisconfigured, which
// the middleware's and the interceptor's FailOpen tests for.
type misconfiguredError struct{ msg string }

// Misconfigured returns a sentinel that is also a zerolock.ErrMisconfigured.
func Misconfigured(msg string) error { return &misconfiguredError{msg: msg} }

func (e *misconfiguredError) Error() string { return e.msg }

func (e *misconfiguredError) Is(target error) bool { return target == zerolock.ErrMisconfigured }
