package zklock

import "errors"

var (
	// ErrInvalidExpiry is returned by the acquire methods when the lock's
	// expiry is not positive: an unwatched lock must release itself.
	ErrInvalidExpiry = errors.New("zklock: expiry must be positive")

	// ErrNodeLost is returned by the acquire methods when this lock's own
	// node vanished between its creation and the decision: the session
	// expired meanwhile, or another client deleted it.
	ErrNodeLost = errors.New("zklock: lock node vanished")

	// ErrZooKeeper wraps every error ZooKeeper or the connection returned
	// (zk.ErrConnectionClosed, zk.ErrNoAuth, ...), which errors.Is also
	// matches.
	ErrZooKeeper = errors.New("zklock: zookeeper request failed")
)
